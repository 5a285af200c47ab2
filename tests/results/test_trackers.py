"""`run.report_to`: TensorBoard event files and an offline W&B run hold the same metrics as metrics.jsonl."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import pytest

from agentbench_af.config import ConfigError
from agentbench_af.results.trackers import flatten_metrics
from agentbench_af.train.config import train_config_from_dict

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "train"))
from train_helpers import tiny_config  # noqa: E402


def test_flatten_metrics_by_hand():
    row = {"step": 3, "loss": 0.5, "tokens_by_role": {"action": 4, "reasoning": 10}, "eval": {"success": 0.25,
           "episodes": 4, "note": "text"}, "flag": True, "bad": float("nan"), "none": None}
    assert flatten_metrics(row) == {"loss": 0.5, "tokens_by_role/action": 4.0, "tokens_by_role/reasoning": 10.0,
                                    "eval/success": 0.25, "eval/episodes": 4.0, "flag": 1.0}


def test_unknown_tracker_is_a_one_line_error():
    with pytest.raises(ConfigError, match=r"run.report_to: unknown tracker\(s\) \['mlflow'\]"):
        train_config_from_dict({"run": {"report_to": ["mlflow"]}})


def _jsonl(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_tensorboard_event_file_holds_the_step_metrics(tmp_path):
    pytest.importorskip("tensorboard", reason="needs the tensorboard extra")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from agentbench_af.train.loop import train

    cfg = tiny_config(tmp_path, run__name="tb", run__report_to="[tensorboard]")
    train(cfg, show_progress=False)
    acc = EventAccumulator(str(tmp_path / "tb" / "tensorboard"))
    acc.Reload()
    rows = _jsonl(tmp_path / "tb")
    for key in ("rollout_return", "rollout_success", "eval/success", "tokens_by_role/action"):
        logged = [(e.step, e.value) for e in acc.Scalars(key)]
        expected = [(r["step"], pytest.approx(flatten_metrics(r)[key])) for r in rows if key in flatten_metrics(r)]
        assert logged == expected and logged


def wandb_history(path: Path) -> list[dict[str, float]]:
    """The history rows of an offline W&B run file (`run-*.wandb`): a 7-byte file header, then
    LevelDB-log records (32 KiB blocks; each chunk: crc32 u32, length u16, type u8; full=1 ... last=4)
    holding `wandb_internal_pb2.Record` messages."""
    from wandb.proto import wandb_internal_pb2 as pb

    data, block, pos, buf, rows = path.read_bytes(), 32768, 7, b"", []
    assert data[:4] == b":W&B"
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:  # a block's tail too short for a header is padding
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        buf, pos = buf + data[pos + 7:pos + 7 + length], pos + 7 + length
        if kind in (1, 4):
            record = pb.Record()
            record.ParseFromString(buf)
            buf = b""
            if record.WhichOneof("record_type") == "history":
                rows.append({i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in record.history.item})
    return rows


def test_wandb_offline_run_holds_the_step_metrics(tmp_path, monkeypatch):
    pytest.importorskip("wandb", reason="needs the wandb extra")
    from agentbench_af.train.loop import train

    monkeypatch.setenv("WANDB_SILENT", "true")
    cfg = tiny_config(tmp_path, run__name="wb", run__report_to="[wandb]")
    train(cfg, show_progress=False)
    (run_file,) = (tmp_path / "wb" / "wandb").glob("offline-run-*/run-*.wandb")
    history = wandb_history(run_file)
    rows = _jsonl(tmp_path / "wb")
    assert [h["_step"] for h in history] == [r["step"] for r in rows] == [0, 1, 2]
    for logged, row in zip(history, rows, strict=True):
        assert {k: v for k, v in logged.items() if not k.startswith("_")} == pytest.approx(flatten_metrics(row))
