"""The hardware and software a run ran on, stored in its record as `fingerprint`, and what must agree
for a re-run to reproduce it bit for bit.

Runs are bit-identical on one machine class: the same device (CPU capability as torch reports it, or
GPU model with its CUDA and cuDNN versions) and the same torch, transformers, tokenizers, numpy and
Python versions. `same_class` compares exactly those; the CPU model name is recorded but not compared
(machines of one capability run the same kernels). The code is compared separately: the project
commit with whether the tree was clean, and `code_hash`, a digest of the installed package's files
(it also covers a dirty tree or an install without git). Records written before fingerprints existed
have none: `same_class` then says unknown (None). Left out: the BLAS/oneDNN build and the thread
count (the thread count is part of the run's config; the BLAS comes with the torch version).
"""

from __future__ import annotations

import functools
import hashlib
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

FINGERPRINT_VERSION = 1
PACKAGES = ("torch", "transformers", "tokenizers", "numpy")
#: the fields that must agree for an exact reproduction, per device type
CLASS_FIELDS = {
    "cpu": ("device", "cpu_capability", "python", *PACKAGES),
    "cuda": ("device", "gpu_name", "cuda", "cudnn", "python", *PACKAGES),
}
_CODE_PACKAGES = ("agentbench_af", "agentbench_af.environments", "agentbench_af.baselines")


def cpu_model() -> str | None:
    """The CPU's model name from /proc/cpuinfo (Linux), else what `platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or None


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@functools.cache
def code_hash() -> str | None:
    """A 16-hex-digit digest of every file of the installed package (environments and baselines included),
    by relative path and content; caches and compiled files are left out. None when it cannot be read."""
    import importlib

    digest = hashlib.sha256()
    try:
        for name in _CODE_PACKAGES:
            for root in importlib.import_module(name).__path__:
                root_path = Path(root)
                for path in sorted(p for p in root_path.rglob("*") if p.is_file()):
                    rel = path.relative_to(root_path)
                    if "__pycache__" in rel.parts or path.suffix in (".pyc", ".pyo"):
                        continue
                    digest.update(f"{name}/{rel.as_posix()}\0".encode())
                    digest.update(hashlib.sha256(path.read_bytes()).digest())
    except (OSError, ImportError):
        return None
    return digest.hexdigest()[:16]


def environment_fingerprint(device: Any = "cpu") -> dict[str, Any]:
    """What this process runs on, for a run on `device` (a torch.device, its name or "auto"): CPU model and
    capability, GPU name, CUDA and cuDNN versions for a CUDA device, package versions, commit, tree state."""
    import torch

    from agentbench_af.results.record import git_commit

    if device == "auto":  # a config's run.device before it is resolved
        device = "cuda" if torch.cuda.is_available() else "cpu"
    kind = torch.device(device).type
    commit = git_commit()
    fp: dict[str, Any] = {
        "fingerprint_version": FINGERPRINT_VERSION,
        "device": kind,
        "cpu_model": cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "gpu_name": None,
        "cuda": None,
        "cudnn": None,
        "python": platform.python_version(),
        **{name: _version(name) for name in PACKAGES},
        "commit": commit.removesuffix("-dirty") if commit else None,
        "clean": None if commit is None else not commit.endswith("-dirty"),
        "code_hash": code_hash(),
    }
    if kind == "cuda" and torch.cuda.is_available():
        fp["gpu_name"] = torch.cuda.get_device_name(torch.device(device))
        fp["cuda"] = torch.version.cuda
        cudnn = torch.backends.cudnn.version()
        fp["cudnn"] = str(cudnn) if cudnn is not None else None
    return fp


def class_differences(a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[str] | None:
    """The class fields on which two fingerprints differ ("torch 2.13.0 vs 2.12.1"); None when either is
    missing (unknown). An empty list means the same class."""
    if not a or not b:
        return None
    fields = CLASS_FIELDS.get(str(a.get("device")), CLASS_FIELDS["cpu"]) if a.get("device") == b.get("device") else ("device",)
    return [f"{f} {a.get(f)} vs {b.get(f)}" for f in fields if a.get(f) != b.get(f)]


def same_class(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool | None:
    """Whether runs on `a` and `b` should be bit-identical given the same code and config (None: unknown).
    The commit and code hash are not compared here."""
    diff = class_differences(a, b)
    return None if diff is None else not diff
