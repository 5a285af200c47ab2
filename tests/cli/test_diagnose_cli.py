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
