"""`reproduce`: the shipped presets expand, the paper preset refuses clearly, and a run publishes a
leaderboard (records, table, plots) that `agentbench-af table` regenerates byte for byte."""

import dataclasses
import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from agentbench_af.cli import app
from agentbench_af.config import config_hash
from agentbench_af.results.record import RunRecord
from agentbench_af.sweep import expand
from agentbench_af.sweep.reproduce import (
    ReproduceConfig,
    ReproduceError,
    check_model_dir,
    hub_models,
    prepare_spec,
    preset_names,
    preset_path,
    reproduce,
)
from agentbench_af.sweep.spec import load_sweep_spec

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


def test_shipped_presets_expand_and_share_warm_starts():
    assert {"demo", "cpu-quick", "cpu-full", "paper"} <= set(preset_names())
    quick = load_sweep_spec(preset_path("cpu-quick"))
    runs = expand(quick)
    # the learnable recipe (cpu-learnable's settings, fewer steps) on the two games where it learns
    assert {r.env.id for r in runs} == {"FrozenLake-4x4-v0", "Sokoban-6x6-1box-v0"}
    assert {r.model.name for r in runs} == {"tiny-0.7m"}
    assert len(runs) == 2 * 4 * 2  # environments x methods x seeds
    assert {r.method for r in runs} == {"ppo", "grpo", "ppo+actfocus", "grpo+actfocus"}
    assert all(r.eval.also_greedy and r.eval.episodes >= 256 and r.rl.lr == 2e-4 for r in runs)
    learnable = {(r.env.id, r.method.split("+")[0]): r for r in expand(load_sweep_spec(preset_path("cpu-learnable")))}
    for r in runs:  # the same recipe as the study's, step count aside
        twin = learnable[(r.env.id, r.method.split("+")[0])]
        assert (r.sft, r.env.overrides, r.loss, r.credit.grpo_norm_by_std, r.rl.critic, r.rl.prompts_per_step) == (
            dataclasses.replace(twin.sft, seed=0), twin.env.overrides, twin.loss, twin.credit.grpo_norm_by_std,
            twin.rl.critic, twin.rl.prompts_per_step)
    # every run of an environment branches from one warm start (sft.seed=0), shared by both seeds
    by_start: dict[str, set[tuple[str, int]]] = {}
    for r in runs:
        by_start.setdefault(r.run.init_from, set()).add((r.method, r.run.seed))
    assert sorted(len(m) for m in by_start.values()) == [8, 8]
    full = expand(load_sweep_spec(preset_path("cpu-full")))
    assert {"grpo+actfocus-reasoning-only", "grpo+action-only", "grpo+top-entropy"} <= {r.method for r in full}
    assert len({r.run.seed for r in full}) == 5
    demo = expand(load_sweep_spec(preset_path("demo")))
    assert [r.method for r in demo] == ["grpo", "grpo+actfocus"]


def test_confirmatory_presets_keep_their_seeds_apart_and_share_warm_starts():
    study = expand(load_sweep_spec(preset_path("cpu-confirm")))
    sweep = expand(load_sweep_spec(preset_path("cpu-confirm-lr")))
    methods = {"ppo", "ppo+actfocus", "grpo", "grpo+actfocus", "grpo+actfocus-reasoning-only", "grpo+actfocus-entropy"}
    assert {r.method for r in study} == {r.method for r in sweep} == methods
    study_seeds, sweep_seeds = {r.run.seed for r in study}, {r.run.seed for r in sweep}
    assert len(study_seeds) >= 5 and not study_seeds & sweep_seeds and min(study_seeds | sweep_seeds) >= 3
    every_goal = {"WebShop-mini-v0": 100}  # an environment with fewer evaluation seeds is evaluated on all of them
    assert all(r.eval.episodes >= every_goal.get(r.env.id, 256) and r.eval.also_greedy and r.eval.temperature == 1.0
               for r in study + sweep)
    assert {(r.env.id, r.model.name) for r in study} >= {("FrozenLake-4x4-v0", "tiny-0.2m"), ("FrozenLake-4x4-v0", "tiny-0.7m"),
                                                        ("Sokoban-6x6-1box-v0", "tiny-0.2m"), ("WebShop-mini-v0", "tiny-0.7m")}
    starts: dict[str, set[str]] = {}
    for r in study:
        starts.setdefault(r.run.init_from, set()).add(r.method)
    assert all(m == methods for m in starts.values())
    assert sorted({r.rl.lr for r in sweep}) == [1e-4, 2e-4, 4e-4]
    assert chosen_rates_of_the_committed_sweep() == {r.method: r.rl.lr for r in study}  # one rate per method


def test_the_sudoku_companion_keeps_cpu_confirms_protocol():
    study = expand(load_sweep_spec(preset_path("cpu-confirm")))
    sudoku = expand(load_sweep_spec(preset_path("cpu-confirm-sudoku")))
    assert {r.env.id for r in sudoku} == {"Sudoku-4x4-10clues-v0"}
    assert {r.method: r.rl.lr for r in sudoku} == {r.method: r.rl.lr for r in study}
    assert {r.run.seed for r in sudoku} == {r.run.seed for r in study}
    assert all(r.rl.steps == 40 and r.eval.episodes >= 256 and r.eval.also_greedy and r.eval.temperature == 1.0
               and r.env.overrides["board"] == "keyed" for r in sudoku)
    starts: dict[str, set[str]] = {}
    for r in sudoku:
        starts.setdefault(r.run.init_from, set()).add(r.method)
    assert len(starts) == 6 and all(len(m) == 6 for m in starts.values())  # one warm start per seed


def test_the_learnable_study_matches_rates_within_a_base_and_uses_fresh_seeds():
    study = expand(load_sweep_spec(preset_path("cpu-learnable")))
    earlier = {r.run.seed for name in ("cpu-quick", "cpu-full", "cpu-confirm", "cpu-confirm-lr", "cpu-confirm-sudoku",
                                       "cpu-confirm-2x2", "cpu-confirm-2x2-rebuilt") for r in expand(load_sweep_spec(preset_path(name)))}
    seeds = {r.run.seed for r in study}
    assert len(seeds) >= 6 and not seeds & earlier and not any(900 <= s < 1000 for s in seeds)  # 900+: tuning
    for base in ("ppo", "grpo"):
        family = [r for r in study if r.method.split("+")[0] == base]
        # one rate and one set of loss settings per base method, shared by its weightings
        assert len({(r.rl.lr, r.loss.agg, r.loss.kl_coef, r.credit.grpo_norm_by_std) for r in family}) == 1
    assert {r.method for r in study} == {"ppo", "ppo+actfocus", "grpo", "grpo+actfocus", "grpo+actfocus-reasoning-only"}
    assert all(r.eval.episodes >= 256 and r.eval.also_greedy and r.eval.temperature == 1.0 for r in study)
    starts: dict[str, set[str]] = {}
    for r in study:
        starts.setdefault(r.run.init_from, set()).add(r.method)
    assert len(starts) == 12 and all(len(m) == 5 for m in starts.values())  # one warm start per (env, seed)


def test_the_sudoku_study_runs_its_tuning_rows_settings_on_fresh_seeds():
    """cpu-learnable-sudoku's GRPO is tuning row U10 and its PPO is U2 (their committed records), on new seeds."""
    study = expand(load_sweep_spec(preset_path("cpu-learnable-sudoku")))
    earlier = {r.run.seed for name in ("cpu-quick", "cpu-full", "cpu-confirm", "cpu-confirm-lr", "cpu-confirm-sudoku",
                                       "cpu-learnable", "cpu-zoo") for r in expand(load_sweep_spec(preset_path(name)))}
    seeds = {r.run.seed for r in study}
    assert len(seeds) == 6 and not seeds & earlier and not any(900 <= s < 1000 for s in seeds)
    rows = ROOT / "docs" / "history" / "recipe-search-runs"
    for base, row in (("grpo", "U10"), ("ppo", "U2")):
        tuned = json.loads((rows / row / "record.json").read_text())["config"]
        for r in (r for r in study if r.method.split("+")[0] == base):
            run = dataclasses.asdict(r)
            for section in ("env", "sft", "rollout"):
                assert run[section] == {**tuned[section], **{k: v for k, v in run[section].items() if k not in tuned[section]}}
            assert {k: run["rl"][k] for k in ("lr", "steps", "prompts_per_step", "critic")} == \
                {k: tuned["rl"][k] for k in ("lr", "steps", "prompts_per_step", "critic")}
            assert (run["loss"]["agg"], run["loss"]["kl_coef"], run["credit"]["grpo_norm_by_std"]) == \
                (tuned["loss"]["agg"], tuned["loss"]["kl_coef"], tuned["credit"]["grpo_norm_by_std"])
            assert run["model"]["name"] == tuned["model"]["name"] and run["eval"]["episodes"] == 512
    starts: dict[str, set[str]] = {}
    for r in study:
        starts.setdefault(r.run.init_from, set()).add(r.method)
    assert len(starts) == 6 and all(len(m) == 5 for m in starts.values())  # one warm start per seed


def test_the_zoo_branches_from_the_learnable_studys_warm_starts_at_grpos_settings():
    zoo = expand(load_sweep_spec(preset_path("cpu-zoo")))
    study = expand(load_sweep_spec(preset_path("cpu-learnable")))
    warm_of = {(r.env.id, r.run.seed): Path(r.run.init_from).name for r in study}
    assert all(Path(r.run.init_from).name == warm_of[(r.env.id, r.run.seed)] for r in zoo)  # one warm start per seed
    grpo = {(r.env.id, r.run.seed): r for r in study if r.method == "grpo"}
    own = {"grpo@dr-grpo": {"agg"}, "grpo@gspo": {"clip_eps_low", "clip_eps_high"},
           "grpo@ds": {"clip_eps_high", "agg", "kl_coef"}}  # what defines the method, besides its label
    for r in zoo:
        base = grpo[(r.env.id, r.run.seed)]
        assert (r.rl.lr, r.rl.steps, r.rl.prompts_per_step, r.eval.episodes) == (
            base.rl.lr, base.rl.steps, base.rl.prompts_per_step, base.eval.episodes)
        differs = {k for k in ("agg", "kl_coef", "clip_eps_low", "clip_eps_high")
                   if getattr(r.loss, k) != getattr(base.loss, k)}
        assert differs == own.get(r.method_label, set()), r.method_label
    assert len({r.method_label for r in zoo}) == 18 and {r.run.seed for r in zoo} <= {r.run.seed for r in study}


@pytest.mark.parametrize("preset, env_id, seeds", [
    ("cpu-zoo-fl-rebuilt", "FrozenLake-4x4-v0", [300, 301]),
    ("cpu-zoo-sk-rebuilt", "Sokoban-6x6-1box-v0", [300, 301, 302]),
])
def test_the_zoos_rebuilt_bases_are_the_learnable_studys_grpo_runs_unchanged(preset, env_id, seeds):
    rebuilt = expand(load_sweep_spec(preset_path(preset)))
    study = {(r.env.id, r.run.seed): r for r in expand(load_sweep_spec(preset_path("cpu-learnable"))) if r.method == "grpo"}
    assert sorted((r.env.id, r.method, r.run.seed) for r in rebuilt) == [(env_id, "grpo", s) for s in seeds]
    for r in rebuilt:
        original = study[(r.env.id, r.run.seed)]
        assert config_hash(r) == config_hash(original)  # the same run, settings and seed
        assert Path(r.run.init_from).name == Path(original.run.init_from).name  # the same warm-start key


def chosen_rates_of_the_committed_sweep() -> dict[str, float]:
    """cpu-confirm-lr's rule on its committed records: per method, the rl.lr with the highest mean
    final success at T = 1 over its environments and seeds; a tie goes to the smaller rate."""
    finals: dict[tuple[str, float], list[float]] = {}
    for path in (ROOT / "leaderboards" / "cpu-confirm-lr" / "runs").glob("*/record.json"):
        record = json.loads(path.read_text())
        finals.setdefault((record["method"], record["config"]["rl"]["lr"]), []).append(record["final_success"])
    assert finals and all(len(v) == 4 for v in finals.values())  # 2 environments x 2 seeds per (method, rate)
    rates_of: dict[str, list[float]] = {}
    for method, lr in finals:
        rates_of.setdefault(method, []).append(lr)
    mean = {key: sum(v) / len(v) for key, v in finals.items()}
    return {m: min(rates, key=lambda lr: (-mean[(m, lr)], lr)) for m, rates in rates_of.items()}


def test_model_choice_cuts_per_env_model_axes(tmp_path):
    preset = tmp_path / "mixed.yaml"
    preset.write_text(yaml.safe_dump({
        "base": {"env": {"id": "FrozenLake-4x4-v0"}},
        "grid": {"envs": ["FrozenLake-4x4-v0", "FrozenLake-6x6-v0"], "models": ["tiny-0.12m", "tiny-0.2m"],
                 "methods": ["grpo"], "seeds": [0]},
        "per_env_models": {"FrozenLake-6x6-v0": ["tiny-0.7m"]}}))

    def cells(**kw):
        return [(c.env.id, c.model.name) for c in expand(prepare_spec(ReproduceConfig(str(preset), work_dir=tmp_path, **kw)))]

    assert cells() == [("FrozenLake-4x4-v0", "tiny-0.12m"), ("FrozenLake-4x4-v0", "tiny-0.2m"),
                       ("FrozenLake-6x6-v0", "tiny-0.7m")]
    assert cells(models=("tiny-0.7m",)) == [("FrozenLake-6x6-v0", "tiny-0.7m")]  # the other env has no such model
    assert cells(models=("tiny-0.2m",), envs=("FrozenLake-4x4-v0",)) == [("FrozenLake-4x4-v0", "tiny-0.2m")]
    with pytest.raises(ReproduceError, match=r"no models \['tiny-2m'\]; its models: \['tiny-0.12m', 'tiny-0.2m', 'tiny-0.7m'\]"):
        cells(models=("tiny-2m",))


def test_method_choice_keeps_the_chosen_methods_own_settings(tmp_path):
    """`--method` on a preset with per-method settings (cpu-confirm's learning rates) runs the chosen
    methods with their own settings, and the others' entries do not stop it."""
    def lrs(**kw):
        spec = prepare_spec(ReproduceConfig("cpu-confirm", work_dir=tmp_path, envs=("WebShop-mini-v0",), **kw))
        return {(c.method, c.run.seed): c.rl.lr for c in expand(spec)}

    every = lrs(seeds=(101,))
    assert len(every) == 6 and len(set(every.values())) > 1  # the preset's rates differ between methods
    chosen = lrs(seeds=(101,), methods=("grpo", "grpo+actfocus-entropy"))
    assert chosen == {key: lr for key, lr in every.items() if key[0] in ("grpo", "grpo+actfocus-entropy")}


def test_paper_preset_names_what_is_missing(tmp_path):
    spec = load_sweep_spec(preset_path("paper"))
    models = hub_models(spec)
    assert models == ["Qwen2.5-0.5B-Instruct", "Qwen2.5-1.5B-Instruct", "Qwen2.5-3B-Instruct"]
    with pytest.raises(ReproduceError, match="--model-dir"):
        prepare_spec(ReproduceConfig("paper"))
    with pytest.raises(ReproduceError, match="no weights for Qwen2.5-0.5B-Instruct"):
        prepare_spec(ReproduceConfig("paper", model_dir=tmp_path))
    for m in models:
        (tmp_path / m).mkdir()
        (tmp_path / m / "config.json").write_text("{}")
        (tmp_path / m / "model.safetensors").write_bytes(b"")
    assert set(check_model_dir(models, tmp_path)) == set(models)
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(ReproduceError, match="CUDA"):
            prepare_spec(ReproduceConfig("paper", model_dir=tmp_path))
    result = runner.invoke(app, ["reproduce", "--preset", "paper", "--dry-run"])
    assert result.exit_code == 2 and "--model-dir" in result.output


def test_unknown_preset_is_one_line():
    result = runner.invoke(app, ["reproduce", "--preset", "cpu-quik"])
    assert result.exit_code == 2
    assert "unknown preset 'cpu-quik'" in result.output and "cpu-quick" in result.output


def _spec_file(tmp_path, tiny_base) -> str:
    spec = {"base": tiny_base, "grid": {"methods": ["grpo", "grpo+actfocus"], "seeds": [0, 1]},
            "warm_start": "shared", "out_dir": "ignored"}
    path = tmp_path / "mini.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def test_reproduce_publishes_records_only_and_reruns_skip(tmp_path, tiny_base, fake_train):
    cfg = ReproduceConfig(_spec_file(tmp_path, tiny_base), out_dir=tmp_path / "board", work_dir=tmp_path / "work",
                          backend="serial")
    outcomes = reproduce(cfg, show_progress=False)
    assert [o.status for o in outcomes] == ["completed"] * 4 and len(fake_train) == 4
    published = sorted(p.relative_to(tmp_path / "board") for p in (tmp_path / "board").rglob("*") if p.is_file())
    assert [p.name for p in published] == ["record.json"] * 4  # no checkpoints or policies
    assert RunRecord.load(tmp_path / "board" / "runs" / outcomes[0].name).final_success == 0.25
    # the work folder was the one passed, not the spec's out_dir
    assert all(str(c.run.out_dir).startswith(str(tmp_path / "work")) for c in fake_train)
    again = reproduce(cfg, show_progress=False)
    assert [o.status for o in again] == ["skipped"] * 4 and len(fake_train) == 4


def test_cli_writes_a_table_that_table_regenerates(tmp_path, tiny_base, fake_train):
    board = tmp_path / "board"
    result = runner.invoke(app, ["reproduce", "--preset", _spec_file(tmp_path, tiny_base), "--out", str(board),
                                 "--work-dir", str(tmp_path / "work"), "--backend", "serial", "--quiet"])
    assert result.exit_code == 0, result.output
    assert "4 runs (0 failed)" in result.output
    first = (board / "table.md").read_text()
    assert "grpo+actfocus" in first and "(2)" in first  # two seeds per cell
    assert (board / "final-success.png").is_file() and (board / "table.csv").is_file()
    again = runner.invoke(app, ["table", str(board)])
    assert again.exit_code == 0, again.output
    assert (board / "table.md").read_text() == first


def test_cli_really_trains_a_one_run_preset(tmp_path, tiny_base):
    """A smoke test with a real (tiny) budget: one warm start, one RL step, the table."""
    spec = {"base": tiny_base, "grid": {"methods": ["grpo+actfocus"], "seeds": [0]}, "warm_start": "shared"}
    path = tmp_path / "one.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = runner.invoke(app, ["reproduce", "--preset", str(path), "--out", str(tmp_path / "b"),
                                 "--work-dir", str(tmp_path / "w"), "--backend", "serial", "--quiet"])
    assert result.exit_code == 0, result.output
    record = json.loads(next((tmp_path / "b").rglob("record.json")).read_text())
    assert record["status"] == "completed" and record["method"] == "grpo+actfocus"
    assert "grpo+actfocus" in (tmp_path / "b" / "table.md").read_text()


def test_a_dirty_checkout_is_refused_unless_allowed(tmp_path, tiny_base, fake_train, monkeypatch):
    from agentbench_af.sweep import reproduce as module

    monkeypatch.setattr(module, "git_commit", lambda: "ab" * 20 + "-dirty")
    spec = _spec_file(tmp_path, tiny_base)
    args = ["reproduce", "--preset", spec, "--out", str(tmp_path / "board"), "--work-dir", str(tmp_path / "w"),
            "--backend", "serial", "--quiet"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "uncommitted changes (commit abababa-dirty)" in result.output
    assert not fake_train and not (tmp_path / "board").exists()
    result = runner.invoke(app, [*args, "--allow-dirty"])
    assert result.exit_code == 0, result.output
    # fake_train's records name no commit; one that names the -dirty commit gets a note under the table
    record = next((tmp_path / "board").rglob("record.json"))
    record.write_text(record.read_text().replace('"git_commit": null', '"git_commit": "' + "ab" * 20 + '-dirty"'))
    assert runner.invoke(app, ["table", str(tmp_path / "board")]).exit_code == 0
    assert ("- 1 of 4 records name a commit with uncommitted changes (abababa-dirty): no commit pins the code "
            "that ran them") in (tmp_path / "board" / "table.md").read_text()
