"""The on-disk cache of generated game files: atomic writes, safe when several workers race.

Root: `$AGENTBENCH_AF_CACHE/<environment>` (default `~/.cache/agentbench_af/<environment>`; ALFWorld
and TextWorld keep their games here). Two processes that generate the same game both write complete
files (or folders) under temporary names and rename them into place, so a reader only ever sees a
whole file or folder. Left out: eviction and locking (a race costs one duplicate generation, nothing else).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def cache_root(environment: str = "alfworld") -> Path:
    base = os.environ.get("AGENTBENCH_AF_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "agentbench_af")
    return Path(base) / environment


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in `path`, or None when it is missing or unreadable (then it is regenerated)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_json_atomic(path: Path, data: dict[str, Any]) -> Path:
    """Write `data` to a temporary file beside `path`, fsync it, and rename it over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def write_dir_atomic(path: Path, fill: Callable[[Path], None]) -> Path:
    """Build a folder with `fill(tmp)` in a temporary folder beside `path`, then rename it to `path`.

    When a complete `path` appeared meanwhile (another worker finished first), that one is kept and
    this copy is dropped. The caller removes a damaged `path` first (see `discard_dir`).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        fill(tmp)
        for item in tmp.iterdir():
            with open(item, "rb") as fh:
                os.fsync(fh.fileno())
        try:
            os.rename(tmp, path)  # atomic; fails when `path` is a folder that is not empty
        except OSError:
            if not path.is_dir():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def discard_dir(path: Path) -> None:
    """Remove a folder by first renaming it away, so no reader sees it half deleted (no-op if absent)."""
    if not path.exists():
        return
    gone = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".gone", dir=path.parent))
    try:
        os.rename(path, gone)  # replaces the empty folder just made
    except FileNotFoundError:  # another worker removed it first
        pass
    shutil.rmtree(gone, ignore_errors=True)
