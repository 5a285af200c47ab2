"""The run record (`record.json`): everything a table needs, written once at the end of a run.

"Final-step success" is the success rate over the fixed evaluation seeds of the environment's
evaluation range after the last update (episodes and temperature recorded in `protocol`). Tables and
plots are generated from these records only. Left out: metrics that are not final (they live in
`metrics.jsonl` and in `curve`).
"""

from __future__ import annotations

import json
import platform
import subprocess
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from agentbench_af.io import atomic_write_json

RECORD_VERSION = 1
_PACKAGES = ("agentbench-af", "torch", "transformers", "tokenizers", "gymnasium", "numpy", "textworld", "alfworld")


def git_commit() -> str | None:
    """The commit of the checkout this package runs from, read when the process imported it.

    Read once at import, so a long-lived sweep worker records the code it is running even if the
    checkout moves on while it works (`-dirty`: tracked files differed from that commit then)."""
    return _LOADED_COMMIT


def _read_git_commit() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5, check=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=here, capture_output=True, text=True, timeout=5
        ).stdout.strip()
        return out.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


_LOADED_COMMIT = _read_git_commit()


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


@dataclass
class RunRecord:
    env_id: str
    method: str
    model: str
    model_params: int
    seed: int
    config_hash: str  # hash of the resolved config without the seed: runs sharing it are averaged
    config: dict[str, Any]
    protocol: dict[str, Any]  # eval episodes, eval temperature, eval seeds, RL steps, group size, catalogue
    final_success: float | None  # None when the run failed
    final_metrics: dict[str, float] = field(default_factory=dict)
    warm_start_success: float | None = None
    curve: list[dict[str, float]] = field(default_factory=list)  # [{"step", "success", ...}]
    tokens_by_role: dict[str, int] = field(default_factory=dict)
    wall_time_s: float = 0.0
    cpu_time_s: float = 0.0  # CPU seconds of the training process (rank 0's), all threads; 0.0 in older records
    status: str = "completed"  # completed | failed
    error: str | None = None
    git_commit: str | None = None
    versions: dict[str, str] = field(default_factory=dict)
    bottleneck: dict[str, Any] | None = None  # action-bottleneck ratios at warm start and final step
    warm_start: dict[str, Any] | None = None  # the warm start used: path, source, key, its SFT settings
    parallel: dict[str, Any] | None = None  # processes that trained it: {"world_size": n, "strategy": ddp|fsdp2|null}
    fingerprint: dict[str, Any] | None = None  # results/fingerprint.py; None in records written before it
    record_version: int = RECORD_VERSION

    def save(self, run_dir: str | Path) -> Path:
        return atomic_write_json(Path(run_dir) / "record.json", asdict(self))

    @classmethod
    def load(cls, path: str | Path) -> RunRecord:
        path = Path(path)
        if path.is_dir():
            path = path / "record.json"
        data = json.loads(path.read_text())
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)
