"""`agentbench-af diagnose`: a run's saved rollouts, a run without them (sampled from its final policy), a
policy directory with `--model --env` (and `--ref`), and one-line errors (exit 2) before any sampling."""

import json
import shutil

import pytest
import torch
from typer.testing import CliRunner

from agentbench_af.cli import app
from agentbench_af.diagnose import load_report
from agentbench_af.diagnose.report import load_headline
from agentbench_af.models.lora import LLAMA_TARGETS
from agentbench_af.models.policy import Policy

torch.set_num_threads(1)
runner = CliRunner()
ENV = "FrozenLake-4x4-v0"
PLOTS = {"bottleneck-shares.png", "bottleneck-shares.svg", "bottleneck-energy.png", "bottleneck-energy.svg"}
REPORT = {"bottleneck.json", "bottleneck.md", "tokens.html"}


def _ok(args):
    res = runner.invoke(app, ["diagnose", *args, "--quiet"])
    assert res.exit_code == 0, res.output
    return res.output


def _error_line(args) -> str:
    res = runner.invoke(app, ["diagnose", *args, "--quiet"])
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    return lines[0]


def _printed_ratio(output: str, source: str, stats) -> None:
    """The printed line of `source` shows the report's action ratio (or says it is undefined)."""
    (line,) = [x for x in output.splitlines() if x.strip().startswith(f"{source} ")]
    ratio = stats.sources[source].bottleneck_ratio
    assert (f"action ratio {ratio:.2f}" if ratio is not None else "action ratio undefined") in line


def test_run_dir_reads_every_saved_step(tiny_run):
    output = _ok([str(tiny_run)])
    out = tiny_run / "diagnose"
    assert REPORT | PLOTS | {"bottleneck-ratio.png", "bottleneck-ratio.svg"} <= {p.name for p in out.iterdir()}
    step, meta, stats = load_report(out / "bottleneck.json")
    assert step == 2 and meta["source"] == "saved rollouts" and meta["env"] == ENV
    assert [row["step"] for row in meta["ratio_by_step"]] == [1, 2]
    assert set(stats.sources) == {"old", "entropy"}
    assert stats.n_groups == 2 and stats.n_trajectories == 8  # 2 prompts x 4 rollouts, as saved
    for source in ("old", "entropy"):
        _printed_ratio(output, source, stats)
    assert "secondary: `old`: action ratio" in output and "2 saved steps" in output
    headline = load_headline(out / "bottleneck.json")
    assert headline.n_groups_used == stats.n_groups_used and meta["headline_policy"] == "final_policy"
    assert f"headline: {headline.verdict()}" in output
    assert (out / "bottleneck.md").read_text().count("**Headline:**") == 1
    assert (out / "bottleneck.md").read_text().splitlines()[0].endswith("(step 2)")
    page = (out / "tokens.html").read_text()
    assert page.count('<section class="group') == 2 and "<script" not in page
    assert "answer" in page and "#0 " not in page  # token text from the run's tokenizer, not ids


def test_run_dir_without_rollouts_samples_its_final_policy(tiny_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run, ignore=shutil.ignore_patterns("rollouts", "diagnose", "checkpoints"))
    output = _ok([str(run), "--prompts", "2", "--group", "3", "--seed", "1"])
    step, meta, stats = load_report(run / "diagnose" / "bottleneck.json")
    assert step == 2 and meta["source"] == "sampled" and meta["group"] == 3 and meta["seed"] == 1
    assert stats.n_groups == 2 and stats.n_trajectories == 6
    assert "2 groups x 3 rollouts at temperature 1" in output
    assert not (run / "diagnose" / "bottleneck-ratio.png").exists()  # one step: no ratio-over-steps plot


def test_model_dir_with_env_and_ref(cli_warm_start, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["--model", str(cli_warm_start), "--env", ENV, "--prompts", "4", "--group", "4",
            "--ref", str(cli_warm_start)]
    output = _ok(args)
    out = tmp_path / f"diagnose-{ENV}"  # the default --out
    assert REPORT | PLOTS <= {p.name for p in out.iterdir()}
    step, meta, stats = load_report(out / "bottleneck.json")
    assert step is None and meta["prompts"] == 4 and meta["ref"] == cli_warm_start.name
    assert set(stats.sources) == {"old", "entropy", "ref"}
    # the reference is the sampling policy itself: its energies are the old ones (up to float noise)
    old, ref = stats.sources["old"].overall.roles["action"], stats.sources["ref"].overall.roles["action"]
    assert ref.signal == pytest.approx(old.signal, rel=1e-4)
    for source in ("old", "entropy", "ref"):
        _printed_ratio(output, source, stats)
    # the same call again samples the same rollouts (seeded), into another folder
    _ok([*args, "--out", str(tmp_path / "again")])
    again = json.loads((tmp_path / "again" / "bottleneck.json").read_text())
    assert again["stats"] == json.loads((out / "bottleneck.json").read_text())["stats"]


def test_errors_are_one_line(tiny_run, cli_warm_start, tmp_path):
    bare = tmp_path / "bare"  # a run directory with its config and nothing else
    bare.mkdir()
    shutil.copy(tiny_run / "config.yaml", bare / "config.yaml")
    cases = [
        ([], "either RUN_DIR or --model"),
        ([str(tiny_run), "--model", str(cli_warm_start)], "either RUN_DIR or --model"),
        ([str(tmp_path / "nope")], "no such run directory"),
        ([str(tmp_path)], "not a run directory (no config.yaml)"),
        ([str(bare)], "no saved rollouts (rollouts/step-*.pt) and no final_policy"),
        ([str(tiny_run), "--env", ENV], "--env goes with --model"),
        (["--model", str(tmp_path / "nope"), "--env", ENV], "--model: no such directory"),
        (["--model", str(tmp_path), "--env", ENV], "not a policy or Hugging Face model directory"),
        (["--model", str(cli_warm_start), "--env", "Nope-v0"], "unknown environment id 'Nope-v0'"),
        (["--model", str(cli_warm_start), "--env", ENV, "--group", "1"], "group size must be >= 2"),
        (["--model", str(cli_warm_start), "--env", ENV, "--prompts", "0"], "prompts must be >= 1"),
        (["--model", str(cli_warm_start), "--env", ENV, "--ref", str(tmp_path / "nope")], "--ref: no such directory"),
    ]
    for args, named in cases:
        assert named in _error_line(args), args


def test_lora_rank_and_max_groups_choose_the_headline(cli_warm_start, tmp_path):
    args = ["--model", str(cli_warm_start), "--env", ENV, "--prompts", "8", "--group", "4", "--seed", "2"]
    _ok([*args, "--out", str(tmp_path / "all")])
    _, meta, _ = load_report(tmp_path / "all" / "bottleneck.json")
    total = sum(p.numel() for p in Policy.load(cli_warm_start, "cpu").lm.parameters())
    assert meta["headline_gradients"] == f"every parameter ({total:,})"
    output = _ok([*args, "--lora-rank", "2", "--max-groups", "1", "--out", str(tmp_path / "lora")])
    _, meta, stats = load_report(tmp_path / "lora" / "bottleneck.json")
    headline = load_headline(tmp_path / "lora" / "bottleneck.json")
    assert stats.n_groups_used == 3 and headline.n_groups_measured == 1 and headline.max_groups == 1
    lm = Policy.load(cli_warm_start, "cpu").lm
    adapted = sum(2 * (m.in_features + m.out_features) for name, m in lm.named_modules()
                  if isinstance(m, torch.nn.Linear) and name.endswith(LLAMA_TARGETS))  # rank 2: A (2 x in), B (out x 2)
    described = f"fresh LoRA adapters, rank 2, alpha 16 ({adapted:,} parameters)"
    assert meta["headline_gradients"] == described and f"(gradients over {described})" in output
    assert f"Headline gradients over: {described}." in (tmp_path / "lora" / "bottleneck.md").read_text()


def test_a_lora_runs_policy_is_measured_over_fresh_adapters(tiny_run, tmp_path):
    run = tmp_path / "lora-run"
    shutil.copytree(tiny_run / "final_policy", run / "final_policy")
    config = (tiny_run / "config.yaml").read_text()
    assert "lora_rank: 0" in config
    (run / "config.yaml").write_text(config.replace("lora_rank: 0", "lora_rank: 2"))
    _ok(["--model", str(run / "final_policy"), "--prompts", "2", "--group", "4", "--out", str(tmp_path / "out")])
    _, meta, _ = load_report(tmp_path / "out" / "bottleneck.json")
    assert meta["headline_gradients"].startswith("fresh LoRA adapters, rank 2, alpha 16")
    _ok(["--model", str(run / "final_policy"), "--prompts", "2", "--group", "4", "--lora-rank", "0",
         "--out", str(tmp_path / "full")])
    assert load_report(tmp_path / "full" / "bottleneck.json")[1]["headline_gradients"].startswith("every parameter")


def test_gradients_that_do_not_fit_fail_before_sampling(cli_warm_start, monkeypatch):
    from agentbench_af.diagnose import gradient_space

    monkeypatch.setattr(gradient_space, "available_bytes", lambda: 1)
    line = _error_line(["--model", str(cli_warm_start), "--env", ENV, "--prompts", "2", "--group", "4"])
    assert "per-rollout gradients over" in line and "--lora-rank 16" in line
    assert "--max-groups must be >= 1" in _error_line(["--model", str(cli_warm_start), "--env", ENV, "--max-groups", "0"])
    assert "--lora-rank must be >= 0" in _error_line(["--model", str(cli_warm_start), "--env", ENV, "--lora-rank", "-1"])


def test_rollout_settings_for_sampling(cli_warm_start, tmp_path):
    sets = ["--rollout", "max_batch_size=4", "--rollout", "context_mode=window", "--rollout", "window_turns=1"]
    _ok(["--model", str(cli_warm_start), "--env", ENV, "--prompts", "2", "--group", "4", *sets, "--out", str(tmp_path / "w")])
    _, meta, stats = load_report(tmp_path / "w" / "bottleneck.json")
    assert meta["rollout_settings"] == ["max_batch_size=4", "context_mode=window", "window_turns=1"]
    assert stats.n_trajectories == 8
    assert "nope" in _error_line(["--model", str(cli_warm_start), "--env", ENV, "--rollout", "nope=1"])
    assert "key.sub=value" in _error_line(["--model", str(cli_warm_start), "--env", ENV, "--rollout", "max_batch_size"])
    assert "context_mode" in _error_line(["--model", str(cli_warm_start), "--env", ENV, "--rollout", "context_mode=half"])


def test_a_killed_diagnostic_resumes(cli_warm_start, tmp_path, monkeypatch):
    from agentbench_af.diagnose import headline

    args = ["--model", str(cli_warm_start), "--env", ENV, "--prompts", "8", "--group", "4", "--seed", "2",
            "--lora-rank", "2"]
    _ok([*args, "--out", str(tmp_path / "once")])
    real, calls = headline.role_grams, []

    def dies_on_the_second_group(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the process is killed while measuring
        return real(*a, **k)

    monkeypatch.setattr(headline, "role_grams", dies_on_the_second_group)
    killed = runner.invoke(app, ["diagnose", *args, "--out", str(tmp_path / "twice"), "--quiet"])
    assert killed.exit_code != 0 and not (tmp_path / "twice" / "bottleneck.json").exists()
    output = _ok([*args, "--out", str(tmp_path / "twice")])
    assert "resuming the diagnostic: the sampled batch and 1 measured group from" in output
    measured = load_headline(tmp_path / "once" / "bottleneck.json").n_groups_measured
    assert len(calls) == 2 + measured - 1  # the resumed call measures only the groups left
    once, twice = (json.loads((tmp_path / d / "bottleneck.json").read_text()) for d in ("once", "twice"))
    assert once == twice
    assert not (tmp_path / "twice" / ".diagnose-checkpoint").exists()  # removed with the report written
    other = _ok([*args, "--seed", "3", "--out", str(tmp_path / "twice")])  # another key: nothing resumed
    assert "resuming" not in other


def test_a_diagnostic_killed_while_sampling_resumes_at_its_chunk(cli_warm_start, tmp_path, monkeypatch):
    from agentbench_af.diagnose import sample

    args = ["--model", str(cli_warm_start), "--env", ENV, "--prompts", "6", "--group", "4", "--seed", "2",
            "--lora-rank", "2", "--sample-chunk", "2"]
    _ok([*args, "--out", str(tmp_path / "once")])
    real, played = sample.collect_rollouts, []

    def dies_in_the_third_chunk(*a, **k):
        played.append(list(a[4]))  # the chunk's environment seeds
        if len(played) == 3:
            raise KeyboardInterrupt  # the process is killed while sampling
        return real(*a, **k)

    monkeypatch.setattr(sample, "collect_rollouts", dies_in_the_third_chunk)
    killed = runner.invoke(app, ["diagnose", *args, "--out", str(tmp_path / "twice"), "--quiet"])
    assert killed.exit_code != 0 and sorted(p.name for p in (tmp_path / "twice" / ".diagnose-checkpoint").glob("chunk-*")) \
        == ["chunk-0.pt", "chunk-1.pt"]
    output = _ok([*args, "--out", str(tmp_path / "twice")])
    assert "resuming the diagnostic: 2 sampled chunks from" in output
    assert len(played) == 4 and played[3] == played[2] and all(len(seeds) == 2 for seeds in played)  # only chunk 2 again
    once, twice = (json.loads((tmp_path / d / "bottleneck.json").read_text()) for d in ("once", "twice"))
    assert once == twice and once["meta"]["sample_chunk"] == 2


def test_one_chunk_is_the_unchunked_batch(cli_warm_start, tmp_path):
    args = ["--model", str(cli_warm_start), "--env", ENV, "--prompts", "4", "--group", "4", "--seed", "2", "--lora-rank", "2"]
    _ok([*args, "--out", str(tmp_path / "a")])
    _ok([*args, "--sample-chunk", "4", "--out", str(tmp_path / "b")])  # as many groups as --prompts: one chunk
    a, b = (json.loads((tmp_path / d / "bottleneck.json").read_text()) for d in ("a", "b"))
    assert a == b and "sample_chunk" not in b["meta"]
