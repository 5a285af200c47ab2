"""The on-disk cache of generated game files: atomic writes, safe when several workers race.

Root: `$AGENTBENCH_AF_CACHE/alfworld` (default `~/.cache/agentbench_af/alfworld`). Two processes that
generate the same task both write complete files under temporary names and rename them into place,
so a reader only ever sees a whole file (generation is deterministic, so either copy is the same).
Left out: eviction and locking (a race costs one duplicate generation, nothing else).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def cache_root() -> Path:
    base = os.environ.get("AGENTBENCH_AF_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "agentbench_af")
    return Path(base) / "alfworld"


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
