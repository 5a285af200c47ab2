"""Files of tensors and plain data (checkpoints, saved rollouts): written atomically, read without running code.

`load_tensor_file` reads with `torch.load(weights_only=True)`, PyTorch's restricted unpickler: it
rebuilds tensors, dicts, lists, tuples, numbers, strings and None, and refuses any other object (a
pickle that would import a function or class and call it) with a one-line `UnsafeFileError`, before
anything in the file is executed. `save_tensor_file` writes through a Python file object, so a full
disk surfaces as `OSError(ENOSPC)` (a one-line `WriteError`), never as a C++ stream error.
Left out: safetensors for these files (their optimizer and RNG states are nested plain data, which a
flat tensor map does not hold); model weights themselves are safetensors (`models.value.save_policy`).
"""

from __future__ import annotations

import pickle
import re
from pathlib import Path
from typing import Any

import torch

from agentbench_af.io import atomic_write


class UnsafeFileError(ValueError):
    """A tensor file that holds something other than tensors and plain data, or is not readable at all."""


def save_tensor_file(payload: Any, path: str | Path) -> Path:
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            torch.save(payload, fh)

    return atomic_write(path, write)


def load_tensor_file(path: str | Path) -> Any:
    """The payload of a file written by `save_tensor_file`; refuses code-carrying pickles (UnsafeFileError)."""
    path = Path(path)
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        found = re.search(r"GLOBAL ([\w.]+)", str(exc))
        if found is None:  # not a pickle the restricted unpickler understands (garbage, truncated)
            raise UnsafeFileError(f"cannot read {path}: not a tensor file written by agentbench-af") from exc
        raise UnsafeFileError(f"refusing to load {path}: it holds objects other than tensors and plain data "
                              f"({found.group(1)}), which could run code; only files written by agentbench-af load") from exc
    except (RuntimeError, EOFError, ValueError, IndexError) as exc:  # IndexError: some truncated pickles
        raise UnsafeFileError(f"cannot read {path}: not a tensor file written by agentbench-af "
                              f"({str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__})") from exc
