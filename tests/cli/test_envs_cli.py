"""Smoke tests for `envs`, `check-env`, `play` and `expert` (tiny budgets)."""

import json

from typer.testing import CliRunner

import agentbench_af
from agentbench_af.cli import app

runner = CliRunner()
ID = "FrozenLake-4x4-v0"


def _run(*args, input=None):
    return runner.invoke(app, list(args), input=input)


def test_envs_table_and_json():
    res = _run("envs")
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[0].split()[:3] == ["id", "turns", "actions/turn"]
    for env_id in agentbench_af.list_envs():
        assert env_id in res.output
    rows = json.loads(_run("envs", "--json").output)
    assert [r["id"] for r in rows] == agentbench_af.list_envs()
    row = next(r for r in rows if r["id"] == ID)
    assert row["variant"]["max_turns"] == 5 and row["description"]


def test_check_env_pass_and_fail():
    res = _run("check-env", ID, "--n-malformed", "50")
    assert res.exit_code == 0, res.output
    assert res.output.startswith(f"PASS {ID}: 7 checks, 50 malformed") and "1 passed, 0 failed" in res.output
    res = _run("check-env", "NoSuchEnv-v0")
    assert res.exit_code == 1 and "FAIL NoSuchEnv-v0: KeyError: unknown environment id" in res.output
    assert _run("check-env").exit_code == 2
    assert _run("check-env", ID, "--all").exit_code == 2


def test_play_to_the_end():
    # seed 0: P O _ _ / _ _ _ _ / _ _ _ _ / _ _ _ G; a bare action, a full response, an invalid word
    res = _run(
        "play",
        ID,
        "--seed",
        "0",
        input="Down || Down\n<think>go right</think><answer>Right || Right</answer>\nFly\nDown || Right\n",
    )
    assert res.exit_code == 0, res.output
    out = res.output
    assert "Actions: Left, Down, Right, Up." in out and out.count("You are solving") == 1
    assert "valid: no  reason: unknown action 'Fly'" in out
    assert "episode over: success; 4 turn(s), total reward +0.90" in out


def test_play_quits_cleanly_on_eof():
    res = _run("play", ID, "--seed", "1", input="Up\n")
    assert res.exit_code == 0, res.output
    assert "quit after 1 turn(s)" in res.output


def test_play_unknown_id():
    res = _run("play", "Nope-v0")
    assert res.exit_code == 2 and "unknown environment id" in res.output


def test_expert_text_and_json():
    res = _run("expert", ID, "--episodes", "3", "--seed-start", "0")
    assert res.exit_code == 0, res.output
    assert "3 episodes (seeds 0..2): success 100.0%, mean reward 1.000" in res.output
    data = json.loads(_run("expert", ID, "--episodes", "4", "--json").output)
    assert data["success_rate"] == 1.0 and data["seeds"] == [1_000_000, 1_000_004] and data["mean_turns"] >= 1


def test_check_env_skips_an_id_whose_data_is_absent(tmp_path, monkeypatch):
    """ALFWorld-official-v0 without the official files (ALFWORLD_DATA empty): SKIP with the reason, exit 0.
    Without the alfworld extra installed the reason is the extra instead; either way nothing failed."""
    import importlib.util

    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    res = _run("check-env", "ALFWorld-official-v0", "--n-malformed", "5")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[-1] == "0 passed, 0 failed, 1 skipped (data or extra absent)"
    if importlib.util.find_spec("textworld") is not None:
        assert lines[0].startswith(f"SKIP ALFWorld-official-v0: no official ALFWorld games at {tmp_path}")
    else:
        assert lines[0].startswith("SKIP ALFWorld-official-v0: environment ALFWorld-official-v0 needs a package")
