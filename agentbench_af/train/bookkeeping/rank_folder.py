"""The run folder in a data-parallel run: rank 0 owns it, the other ranks follow without writing.

Rank 0 opens the locked `RunFolder` (its checks, its config.yaml) and tells the others whether that
worked, so that every rank stops with the same one-line error. `FollowerFolder` is what the other
ranks get: the same methods, reading rank 0's checkpoint on resume and taking part in the collectives
a checkpoint needs (FSDP2 gathers), but writing nothing: metrics, checkpoints, rollout samples, the
final policy and the record are rank 0's.
Left out: per-rank logs (a rank's own metrics are merged into rank 0's row).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentbench_af.models.policy import Policy
from agentbench_af.results.record import RunRecord
from agentbench_af.rollout.batch import RolloutBatch
from agentbench_af.train.bookkeeping.record import Progress
from agentbench_af.train.bookkeeping.run_folder import RunFolder, RunFolderError, restore_latest
from agentbench_af.train.config import TrainConfig
from agentbench_af.train.distributed.ranks import Ranks, broadcast_object
from agentbench_af.train.update.learner import Learner


class FollowerFolder:
    """A non-zero rank's view of the run folder (see the module docstring)."""

    def __init__(self, cfg: TrainConfig, resume: bool = False) -> None:
        self.cfg, self.resume = cfg, resume
        self.dir = Path(cfg.run.out_dir) / cfg.run_name

    def restore(self, learner: Learner) -> tuple[int, Progress] | None:
        return restore_latest(self.dir, learner) if self.resume else None

    def begin(self, first_eval: Callable[[], dict[str, Any]]) -> Progress:
        first = first_eval()
        return Progress(curve=[first], warm_start_success=first["success"])

    def log(self, row: dict[str, Any]) -> None:
        pass

    def save_rollouts(self, batch: RolloutBatch, done: int) -> None:
        pass

    def checkpoint(self, done: int, learner: Learner, progress: Progress) -> None:
        if done % self.cfg.run.checkpoint_every == 0 or done == self.cfg.rl.steps:
            learner.model_state()  # FSDP2: every rank takes part in gathering the full state
            learner.optimizer_state()

    def finish(self, policy: Policy, record: RunRecord) -> RunRecord:
        return record


@contextmanager
def run_folder(cfg: TrainConfig, ranks: Ranks, resume: bool = False, overwrite: bool = False) -> Iterator[RunFolder | FollowerFolder]:
    """`RunFolder` on rank 0 (and for one process), `FollowerFolder` on the others."""
    if not ranks.active:
        with RunFolder(cfg, resume=resume, overwrite=overwrite) as run:
            yield run
        return
    if not ranks.is_main:
        error = broadcast_object(None, ranks)
        if error is not None:
            raise RunFolderError(error)
        yield FollowerFolder(cfg, resume)
        return
    folder = RunFolder(cfg, resume=resume, overwrite=overwrite, timed_checkpoints=False)
    try:
        folder.__enter__()
    except Exception as exc:
        broadcast_object(str(exc) or type(exc).__name__, ranks)
        raise
    broadcast_object(None, ranks)
    try:
        yield folder
    finally:
        folder.__exit__(None, None, None)
