"""The example plugin (examples/plugin, installed on its own): its entry points are discovered, its
environment passes the contract checker, its weighting is right on a hand-built batch, and both train
through the `train` CLI and through a `sweep`, with nothing inside agentbench_af naming them."""

from __future__ import annotations

import json
import sys
from importlib.metadata import entry_points
from pathlib import Path

import torch
import yaml
from plugin_paths import ROOT
from typer.testing import CliRunner

import agentbench_af
from agentbench_af.cli import app
from agentbench_af.credit import CreditConfig, compute_token_weights
from agentbench_af.plugins import CREDIT_GROUP, ENVIRONMENTS_GROUP

sys.path.insert(0, str(ROOT / "tests" / "credit"))
from batch_factory import SampleSpec, build_batch  # noqa: E402
from train_helpers import tiny_overrides  # noqa: E402

ENV = "LightsOut-3x3-v0"


def test_entry_points_are_discovered_and_register():
    assert "agentbench_lightsout.variants" in {ep.value for ep in entry_points(group=ENVIRONMENTS_GROUP)}
    assert "agentbench_lightsout.weighting" in {ep.value for ep in entry_points(group=CREDIT_GROUP)}
    assert {"LightsOut-3x3-v0", "LightsOut-3x3-easy-v0"} <= set(agentbench_af.list_envs())
    from agentbench_af.credit import TOKEN_WEIGHTINGS, get_token_weighting

    get_token_weighting("last-action")
    assert TOKEN_WEIGHTINGS["last-action"].fn.__module__ == "agentbench_lightsout.weighting"


def test_package_source_does_not_name_the_plugin():
    hits = [p for p in (ROOT / "agentbench_af").rglob("*.py") if "lightsout" in p.read_text().lower()]
    hits += [p for p in (ROOT / "environments").rglob("*.py") if "lightsout" in p.read_text().lower()]
    assert hits == []


def test_environment_passes_the_contract_checker():
    for env_id in ("LightsOut-3x3-v0", "LightsOut-3x3-easy-v0"):
        report = agentbench_af.check_env(env_id)
        assert {"reset_deterministic", "expert_valid", "replay", "malformed", "valid_prefix", "turn_limit",
                "step_types"} <= set(report.passed)
        assert report.expert_success_rate == 1.0  # BFS is optimal and every 3x3 board needs <= 9 presses


def test_lights_out_rules_by_hand():
    from agentbench_lightsout.env import press_mask, shortest_solution

    assert press_mask(0) == 0b000_001_011  # a1: a1, b1, a2
    assert press_mask(4) == 0b010_111_010  # b2: the plus shape
    assert shortest_solution(press_mask(4)) == [4]
    assert shortest_solution(press_mask(0) ^ press_mask(8)) in ([0, 8], [8, 0])
    assert max(len(shortest_solution(b)) for b in range(512)) == 9  # the all-presses board
    env = agentbench_af.make(ENV)
    env.reset(seed=0)
    env._board = press_mask(4)  # one press from solved
    _, reward, terminated, _, info = env.step("<answer>B2</answer>")
    assert (reward, terminated, info["success"], env.render()) == (1.0, True, True, "  a b c\n1 . . .\n2 . . .\n3 . . .")


def test_last_action_weighting_by_hand():
    # row 0: one trajectory in full context, turn 0 = r a f, turn 1 = r a a; row 1: reasoning only
    batch = build_batch([SampleSpec(0, "prafpraa", turns=[0, 0, 0, 0, 1, 1, 1, 1]), SampleSpec(1, "prr")],
                        [0, 0], [1.0, 0.0])
    w = compute_token_weights(batch, CreditConfig(weighting="last-action"))
    assert w.tolist() == [[0, 0, 1, 0, 0, 0, 0, 1, 0], [0] * 9]
    # format tokens counted as action tokens (credit.format_role): turn 0's last one is the `f` at 3
    w = compute_token_weights(batch, CreditConfig(weighting="last-action", format_role="action"))
    assert w[0].tolist() == [0, 0, 0, 1, 0, 0, 0, 1, 0]


def _run_dir_metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_train_cli_two_steps_with_the_plugin(tmp_path):
    overrides = tiny_overrides(tmp_path, ENV, method="grpo+last-action", run__name="lo",
                               rollout__max_new_tokens=40)
    res = CliRunner().invoke(app, ["train", *overrides, "--quiet"])
    assert res.exit_code == 0, res.output
    record = json.loads((tmp_path / "lo" / "record.json").read_text())
    assert record["env_id"] == ENV and record["method"] == "grpo+last-action"
    assert record["config"]["credit"]["weighting"] == "last-action"
    assert [r["step"] for r in _run_dir_metrics(tmp_path / "lo")] == [0, 1, 2]


def test_sweep_trains_the_plugin_in_worker_processes(tmp_path):
    base = {k: yaml.safe_load(v) for k, v in (o.split("=", 1) for o in tiny_overrides(tmp_path / "unused", ENV))}
    spec = {"base": _nest(base), "grid": {"methods": ["grpo+last-action"], "seeds": [0]},
            "out_dir": str(tmp_path / "sweep"), "threads_per_run": 1}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    # the local backend spawns a fresh worker process: it finds the plugin through the entry points
    res = CliRunner().invoke(app, ["sweep", str(tmp_path / "spec.yaml"), "--backend", "local", "--workers", "1",
                                   "--quiet"])
    assert res.exit_code == 0, res.output
    runs = list((tmp_path / "sweep" / "runs").iterdir())
    assert len(runs) == 1 and json.loads((runs[0] / "record.json").read_text())["status"] == "completed"
    assert [r["step"] for r in _run_dir_metrics(runs[0])] == [0, 1, 2]


def _nest(flat: dict) -> dict:
    out: dict = {}
    for key, value in flat.items():
        node = out
        *parents, last = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return out


def test_weighting_output_is_zero_off_the_mask():
    batch = build_batch([SampleSpec(0, "pa"), SampleSpec(1, "pra")], [0, 0], [1.0, 0.0], pad=2)
    w = compute_token_weights(batch, CreditConfig(weighting="last-action"))
    assert w.tolist() == [[0, 1, 0, 0, 0], [0, 0, 1, 0, 0]]
    assert w.dtype == torch.float32
