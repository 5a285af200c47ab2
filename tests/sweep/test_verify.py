"""`agentbench-af verify` on a one-cell leaderboard made here: it passes with an exact match as the
record was written, and fails once the record's final success is edited."""

import json

import pytest
from sweep_helpers import TINY_BASE, fake_record
from typer.testing import CliRunner

from agentbench_af.cli import app
from agentbench_af.config import from_dict
from agentbench_af.results.record import RunRecord
from agentbench_af.sweep.reproduce import publish_records
from agentbench_af.sweep.runner import run_sweep
from agentbench_af.sweep.spec import GridSpec, SweepSpec
from agentbench_af.sweep.verify import VerifyError, choose_cells, find_cells
from agentbench_af.train.config import TrainConfig

CELL = "FrozenLake-4x4-v0-ppo-tiny-0.12m-s0"


def _board(tmp_path):
    base = {**TINY_BASE, "model": {"name": "tiny-0.12m", "tokenizer_episodes": 5}, "eval": {"episodes": 4},
            "run": {"device": "cpu"}}
    spec = SweepSpec(base=base, grid=GridSpec(methods=("ppo",), seeds=(0,)), out_dir=str(tmp_path / "work"),
                     warm_start="shared")
    outcomes = run_sweep(spec, backend="serial", show_progress=False)
    assert [o.status for o in outcomes] == ["completed"], [o.error for o in outcomes]
    board = tmp_path / "board"
    publish_records(outcomes, board)
    return board


def _verify(board, work, report):
    return CliRunner().invoke(app, ["verify", str(board), "--cells", CELL, "--backend", "serial", "--quiet",
                                    "--work-dir", str(work), "--json", str(report)])


def test_verify_passes_exactly_then_catches_an_edited_record(tmp_path):
    board = _board(tmp_path)
    path = board / "runs" / CELL / "record.json"
    record = RunRecord.load(path)
    assert record.fingerprint["device"] == "cpu" and record.fingerprint["code_hash"]
    before = {p: p.read_bytes() for p in board.rglob("*") if p.is_file()}

    res = _verify(board, tmp_path / "v1", tmp_path / "ok.json")
    assert res.exit_code == 0, res.output
    check = json.loads((tmp_path / "ok.json").read_text())["checks"][0]
    assert check["exact_expected"] and check["exact"] and check["verdict"] == "exact match"
    assert check["recorded_final"] == check["rerun_final"] == record.final_success
    assert check["rerun_curve"] == check["recorded_curve"] == [c["success"] for c in record.curve]
    assert "1 passed (1 exact), 0 failed" in res.output
    assert {p: p.read_bytes() for p in board.rglob("*") if p.is_file()} == before  # the leaderboard is untouched

    edited = json.loads(path.read_text())
    edited["final_success"] = 0.25 if record.final_success != 0.25 else 0.5  # one episode of four
    path.write_text(json.dumps(edited))
    res = _verify(board, tmp_path / "v2", tmp_path / "bad.json")
    assert res.exit_code == 1, res.output
    check = json.loads((tmp_path / "bad.json").read_text())["checks"][0]
    assert check["exact_expected"] and not check["exact"] and check["verdict"] == "FAIL: exact match expected"
    assert "FAIL: exact match expected" in res.output


def _fake_board(root, seeds=range(5)):
    for seed in seeds:
        fake_record(from_dict(TrainConfig, {"run": {"seed": seed, "out_dir": str(root / "runs")}}))
    return root


def test_cells_are_drawn_with_the_seed_or_named(tmp_path):
    cells = find_cells(_fake_board(tmp_path))
    names = [c.name for c in cells]
    assert len(names) == 5
    drawn = [c.name for c in choose_cells(cells, 2, seed=7)]
    assert drawn == [c.name for c in choose_cells(cells, 2, seed=7)] and len(set(drawn)) == 2
    assert [c.name for c in choose_cells(cells, 9, seed=0)] == names  # more than there are: all of them
    assert [c.name for c in choose_cells(cells, 1, 0, [names[3], names[1]])] == [names[3], names[1]]
    with pytest.raises(VerifyError, match="no completed cell named 'nope'"):
        choose_cells(cells, 1, 0, ["nope"])


def test_bad_input_is_one_line(tmp_path):
    res = CliRunner().invoke(app, ["verify", str(tmp_path / "missing")])
    assert res.exit_code == 2 and "no such leaderboard folder" in res.output
    (tmp_path / "empty").mkdir()
    res = CliRunner().invoke(app, ["verify", str(tmp_path / "empty")])
    assert res.exit_code == 2 and "no completed record.json" in res.output
    board = _fake_board(tmp_path / "board", seeds=[0])
    res = CliRunner().invoke(app, ["verify", str(board), "--work-dir", str(board / "runs" / "verify")])
    assert res.exit_code == 2 and "is inside the leaderboard" in res.output
    res = CliRunner().invoke(app, ["verify", str(board), "--cells", "nope"])
    assert res.exit_code == 2 and "no completed cell named 'nope'" in res.output
