"""A read-only output folder and a full disk are one-line errors (exit 2) that name the path, and leave
nothing half-written: the failing write is rolled back, earlier files stay intact.

The filesystems are simulated: `os.open`/`os.mkdir`/`open` raise EROFS under a read-only folder, and
writes to checkpoint files raise ENOSPC after writing half their bytes (what a full disk does)."""

import builtins
import errno
import os
from pathlib import Path

import pytest
from reliability_helpers import run_overrides
from typer.testing import CliRunner

from agentbench_af.cli import app
from agentbench_af.io import append_jsonl, atomic_write_text, read_jsonl
from agentbench_af.train.bookkeeping.checkpoint import latest_checkpoint

runner = CliRunner()


def _one_error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    return lines[0]


def _mount_point(path: Path) -> Path:
    path = path.absolute()
    while not os.path.ismount(path):
        path = path.parent
    return path


def _under(path, root: Path) -> bool:
    try:
        return Path(os.fsdecode(path)).absolute().is_relative_to(root)
    except TypeError:  # a file descriptor
        return False


@pytest.fixture
def read_only(monkeypatch, tmp_path):
    """A folder whose filesystem refuses every write (EROFS)."""
    root = tmp_path / "ro"
    root.mkdir()
    real_open, real_os_open, real_mkdir = builtins.open, os.open, os.mkdir

    def refuse(path):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))

    def fake_open(file, mode="r", *args, **kwargs):
        if _under(file, root) and any(c in mode for c in "wax+"):
            refuse(file)
        return real_open(file, mode, *args, **kwargs)

    def fake_os_open(path, flags, *args, **kwargs):
        if _under(path, root) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            refuse(path)
        return real_os_open(path, flags, *args, **kwargs)

    def fake_mkdir(path, *args, **kwargs):
        if _under(path, root):
            refuse(path)
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(os, "open", fake_os_open)
    monkeypatch.setattr(os, "mkdir", fake_mkdir)
    return root


class HalfThenFull:
    """A file whose writes store half their bytes, then fail as a full disk does."""

    def __init__(self, fh):
        self.fh = fh

    def write(self, data):
        self.fh.write(data[: len(data) // 2])
        self.fh.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name):
        return getattr(self.fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.fh.close()


def test_a_read_only_output_folder_is_one_line(tmp_path, read_only, warm_start):
    res = runner.invoke(app, ["train", *run_overrides(read_only / "runs", warm_start), "--quiet"])
    assert res.exit_code == 2, res.output
    line = _one_error_line(res.output)
    assert line == f"error: cannot write {read_only / 'runs' / 'run'}: read-only file system"
    assert list(read_only.iterdir()) == []


def test_a_full_disk_while_checkpointing_is_one_line_and_leaves_no_half_file(tmp_path, monkeypatch, warm_start):
    real_open = builtins.open

    def full_for_the_second_checkpoint(file, mode="r", *args, **kwargs):
        fh = real_open(file, mode, *args, **kwargs)
        if "w" in mode and ".ckpt-000004.pt." in os.fsdecode(file):
            return HalfThenFull(fh)
        return fh

    monkeypatch.setattr(builtins, "open", full_for_the_second_checkpoint)
    res = runner.invoke(app, ["train", *run_overrides(tmp_path, warm_start), "--quiet"])
    assert res.exit_code == 2, res.output
    run_dir = tmp_path / "run"
    line = _one_error_line(res.output)
    assert line == (f"error: no space left on {_mount_point(run_dir)} while writing "
                    f"{run_dir / 'checkpoints' / 'ckpt-000004.pt'}")
    assert latest_checkpoint(run_dir).name == "ckpt-000002.pt"  # the last good checkpoint is kept
    assert not [p for p in run_dir.rglob("*") if p.name.endswith(".tmp")]  # no half-written file
    assert not (run_dir / "record.json").exists()


def test_a_failed_append_is_cut_back_off(tmp_path, monkeypatch):
    path = tmp_path / "metrics.jsonl"
    append_jsonl(path, {"step": 0})
    real_write = os.write

    def half_then_full(fd, data):
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OSError, match=f"^no space left on {_mount_point(tmp_path)} while writing {path}$"):
        append_jsonl(path, {"step": 1, "loss": 0.5})
    monkeypatch.undo()
    append_jsonl(path, {"step": 1})
    assert read_jsonl(path) == [{"step": 0}, {"step": 1}]  # no torn row in the middle


def test_an_atomic_write_that_fails_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "config.yaml"
    atomic_write_text(path, "old\n")
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError(errno.EROFS, "Read-only file system")))
    with pytest.raises(OSError, match=f"^cannot write {path}: read-only file system$"):
        atomic_write_text(path, "new\n")
    assert path.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["config.yaml"]
