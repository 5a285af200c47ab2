"""A diagnostic's finished work kept on disk, so that a killed `agentbench-af diagnose` resumes where it stopped.

    ck = DiagnoseCheckpoint.open(out_dir / CHECKPOINT_DIR, key)  # key: what the batch and the gradients depend on
    batch = ck.batch() or ck.save_batch(sample_batch(...))        # the sampled, scored batch
    compute_headline(batch, lm, ..., grams=ck)                    # per group: ck.grams(g), else measured and ck.put(g, ...)
    ck.finish()                                                   # the report is written: the folder goes

The folder holds key.json, batch.pt (the scored batch, in `results.rollout_store`'s format, only where the
batch was sampled), while it is being sampled in chunks (`diagnose --sample-chunk`) one chunk-<i>.pt per
finished chunk (`ChunkFiles`, removed once batch.pt is written), and one grams-<group>.pt per measured group (its two (G, G) Gram matrices: a few hundred
bytes for a group that took minutes). A folder whose key differs from the call's (another model, seed,
rollout setting, gradient space ...) is cleared first. The key leaves out the headline's max_groups,
shuffles, resamples and confidence: they do not change a group's gradients, so a rerun with a larger
--max-groups keeps the groups already measured. Every file is written atomically (`io.atomic_write`).
Left out: a model's weights are identified by their files' names, sizes and modification times, not by content.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from agentbench_af.io import atomic_write_json
from agentbench_af.results.rollout_store import load_rollouts, save_rollouts
from agentbench_af.results.tensor_files import UnsafeFileError, load_tensor_file, save_tensor_file
from agentbench_af.rollout.batch import RolloutBatch

CHECKPOINT_DIR = ".diagnose-checkpoint"  # inside the output folder
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")


def file_stamps(paths: list[Path], root: Path) -> list[list[Any]]:
    """[name relative to `root`, size, mtime_ns] of each file: what a key compares instead of the content."""
    return [[str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns] for p in paths]


def weight_files(model_dir: Path) -> list[list[Any]]:
    """`file_stamps` of each weight file in `model_dir` (and one level below, e.g. a LoRA adapter)."""
    files = sorted(p for p in [*model_dir.glob("*"), *model_dir.glob("*/*")] if p.is_file() and p.suffix in WEIGHT_SUFFIXES)
    return file_stamps(files, model_dir)


def _kept_batch(path: Path) -> RolloutBatch | None:
    """The rollouts saved at `path`, or None (no file, or unreadable: a torn or foreign file)."""
    if not path.is_file():
        return None
    try:
        return load_rollouts(path)[1]
    except (OSError, UnsafeFileError, TypeError):
        return None


def _normalised(key: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(key, sort_keys=True, default=str))


@dataclass(frozen=True)
class DiagnoseCheckpoint:
    folder: Path
    resumed_groups: int  # groups whose Gram matrices were on disk when the folder was opened
    resumed_batch: bool  # a sampled batch was on disk
    resumed_chunks: int = 0  # finished chunks of a batch sampled in chunks, when the whole batch was not

    @classmethod
    def open(cls, folder: Path, key: dict[str, Any]) -> DiagnoseCheckpoint:
        """The checkpoint folder for `key` (JSON-able): kept if it was written for the same key, else cleared."""
        key = _normalised(key)
        key_file = folder / "key.json"
        try:
            same = key_file.is_file() and json.loads(key_file.read_text()) == key
        except (OSError, ValueError):
            same = False
        if not same:
            shutil.rmtree(folder, ignore_errors=True)
            atomic_write_json(key_file, key)
        return cls(folder, len(list(folder.glob("grams-*.pt"))), (folder / "batch.pt").is_file(),
                   len(list(folder.glob("chunk-*.pt"))))

    def batch(self) -> RolloutBatch | None:
        """The saved sampled batch, or None (none saved, or unreadable: it is sampled again)."""
        return _kept_batch(self.folder / "batch.pt")

    def save_batch(self, batch: RolloutBatch) -> RolloutBatch:
        save_rollouts(batch, self.folder / "batch.pt", 0)
        for chunk in self.folder.glob("chunk-*.pt"):  # the whole batch replaces its chunks
            chunk.unlink(missing_ok=True)
        return batch

    def chunks(self) -> ChunkFiles:
        """The finished chunks of a batch sampled in chunks (`diagnose.sample.SampledChunks`)."""
        return ChunkFiles(self.folder)

    def grams(self, group: int) -> dict[str, torch.Tensor] | None:
        """Group `group`'s role -> (G, G) Gram matrix, or None (not measured yet, or unreadable)."""
        path = self.folder / f"grams-{group}.pt"
        if not path.is_file():
            return None
        try:
            grams = load_tensor_file(path)
        except (OSError, UnsafeFileError):
            return None
        return grams if isinstance(grams, dict) and all(isinstance(v, torch.Tensor) for v in grams.values()) else None

    def put(self, group: int, grams: dict[str, torch.Tensor]) -> None:
        save_tensor_file(grams, self.folder / f"grams-{group}.pt")

    def finish(self) -> None:
        """Remove the folder (the report it served is written)."""
        shutil.rmtree(self.folder, ignore_errors=True)


@dataclass(frozen=True)
class ChunkFiles:
    """Finished chunks of a sampled batch, chunk-<index>.pt in the checkpoint folder (atomic files)."""

    folder: Path

    def get(self, index: int) -> RolloutBatch | None:
        """Chunk `index`, or None (not finished yet, or unreadable: it is sampled again)."""
        return _kept_batch(self.folder / f"chunk-{index}.pt")

    def put(self, index: int, batch: RolloutBatch) -> None:
        save_rollouts(batch, self.folder / f"chunk-{index}.pt", 0)
