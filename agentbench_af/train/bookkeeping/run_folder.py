"""The run folder `<run.out_dir>/<run name>`: one run's files, owned by one process at a time.

`RunFolder` is a context manager. On entry it takes an exclusive lock (`.lock`, an `fcntl.flock` held
for the run's life; the kernel drops it when the process dies, even by SIGKILL), so a second process
on the same folder stops with a one-line `RunFolderBusy` naming the holder's pid. It then refuses a
folder started with another config (a different `config_hash` or seed in its `config.yaml`), a finished
run without `resume`, and a checkpoint without `resume`; `overwrite` empties the folder instead. Then
it writes `config.yaml` and opens the trackers of `run.report_to` (results/trackers.py), which get every
metrics row too. Inside, it writes metrics rows, checkpoints, rollout samples, the final policy
and the record, all atomically (`io`), and restores a checkpoint into a `Learner`. A checkpoint is
saved every `run.checkpoint_every` steps, after the last one, and (with `timed_checkpoints`, a run of one
process) after any step that ends `RL_CHECKPOINT_SECONDS` after the last save: a SmolLM2 step takes 15-40
minutes on a shared CPU, so 5 steps could outlast the session that runs them. A checkpoint changes no
number of the run (each step reseeds from the run seed and the step).
Left out: locking on Windows (no `fcntl`: the folder is not locked there) and on network filesystems
whose `flock` is local to one machine.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from agentbench_af.config import ConfigError, config_hash, from_dict, to_dict
from agentbench_af.io import (
    append_jsonl,
    atomic_dir,
    atomic_write_text,
    make_dirs,
    read_jsonl,
    rewrite_jsonl,
    write_error,
)
from agentbench_af.models.policy import Policy
from agentbench_af.results.record import RunRecord
from agentbench_af.results.rollout_store import save_rollouts, select_groups
from agentbench_af.results.trackers import Trackers, open_trackers
from agentbench_af.rollout.batch import RolloutBatch
from agentbench_af.train.bookkeeping.checkpoint import (
    TrainState,
    latest_checkpoint,
    load_checkpoint,
    restore_rng_states,
    save_checkpoint,
)
from agentbench_af.train.bookkeeping.record import Progress
from agentbench_af.train.config import TrainConfig
from agentbench_af.train.update.learner import Learner

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = ".lock"


class RunFolderError(FileExistsError):
    """The run folder cannot be used as asked; the message is one line saying what to do."""


class RunFolderBusy(RunFolderError):
    """Another process holds the run folder's lock."""


class RunLock:
    """An exclusive, non-blocking `flock` on `<run_dir>/.lock`, which holds the holder's pid while held."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir, self.path = Path(run_dir), Path(run_dir) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        if fcntl is None:
            return
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise write_error(exc, self.path) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise RunFolderBusy(f"{self.run_dir} is in use by another run (pid {holder}): wait for it to finish, "
                                "stop it, or use another run.name") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
            except OSError:
                pass  # the lock goes with the descriptor either way
            os.close(self._fd)
            self._fd = None


def _saved_identity(path: Path) -> tuple[str, int] | None:
    try:
        saved = from_dict(TrainConfig, yaml.safe_load(path.read_text()))
    except (OSError, ConfigError, yaml.YAMLError, TypeError):
        return None
    return config_hash(saved), saved.run.seed


def check_folder(run_dir: Path, cfg: TrainConfig, resume: bool) -> None:
    """Raise RunFolderError when `run_dir` holds another config's files, or a run `resume` would be needed for."""
    saved = run_dir / "config.yaml"
    mine = (config_hash(cfg), cfg.run.seed)
    if saved.exists() and (found := _saved_identity(saved)) != mine:
        was = f"config {found[0]} seed {found[1]}" if found else "an unreadable config"
        raise RunFolderError(f"{run_dir} was started with a different config ({was} in its config.yaml; this one is "
                             f"config {mine[0]} seed {mine[1]}): resume it with the same settings, use another "
                             "run.name, or pass --overwrite")
    if (run_dir / "record.json").exists() and not resume:
        raise RunFolderError(f"{run_dir} already holds a finished run (use another run.name, --resume or --overwrite)")
    if latest_checkpoint(run_dir) is not None and not resume:
        raise RunFolderError(f"{run_dir} holds a checkpoint: pass --resume to continue it (or --overwrite)")


def empty_folder(run_dir: Path) -> None:
    """Remove everything in `run_dir` but its lock file."""
    for item in run_dir.iterdir():
        if item.name == LOCK_FILE:
            continue
        shutil.rmtree(item) if item.is_dir() and not item.is_symlink() else item.unlink()


def restore_latest(run_dir: Path, learner: Learner) -> tuple[int, Progress] | None:
    """Load `run_dir`'s latest checkpoint into `learner` and the RNGs: (its step, the run's progress), or
    None when there is no checkpoint."""
    ckpt = latest_checkpoint(run_dir)
    if ckpt is None:
        return None
    state, rng = load_checkpoint(ckpt)
    if state.scheduler is None:  # only an SFT checkpoint is written without a scheduler
        raise ValueError(f"{ckpt} has no learning-rate scheduler state: not an RL run's checkpoint")
    learner.load_state(state.model, state.optimizer, state.scheduler)
    restore_rng_states(rng)
    return state.step, Progress.from_dict(state.extra)


#: wall-clock seconds after which the next finished step saves a checkpoint anyway (one process only)
RL_CHECKPOINT_SECONDS = 600.0


class RunFolder:
    """A locked run folder; see the module docstring. Use as `with RunFolder(cfg, resume) as run: ...`.
    `timed_checkpoints=False` under data parallelism: every rank must take part in each save, and only
    the step counts are the same on every rank."""

    def __init__(self, cfg: TrainConfig, resume: bool = False, overwrite: bool = False,
                 timed_checkpoints: bool = True) -> None:
        self.cfg, self.resume, self.overwrite = cfg, resume, overwrite
        self.timed_checkpoints, self.last_save = timed_checkpoints, time.monotonic()
        self.dir = Path(cfg.run.out_dir) / cfg.run_name
        self.metrics = self.dir / "metrics.jsonl"
        self.lock = RunLock(self.dir)
        self.started = time.time()
        self.started_cpu = time.process_time()
        self.trackers = Trackers([])

    def __enter__(self) -> RunFolder:
        make_dirs(self.dir)
        self.lock.acquire()
        try:
            if self.overwrite:
                empty_folder(self.dir)
            check_folder(self.dir, self.cfg, self.resume)
            atomic_write_text(self.dir / "config.yaml", yaml.safe_dump(to_dict(self.cfg), sort_keys=False))
            self.trackers = open_trackers(self.cfg, self.dir)
        except BaseException:
            self.lock.release()
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.trackers.close()
        finally:
            self.lock.release()

    def restore(self, learner: Learner) -> tuple[int, Progress] | None:
        """Load the latest checkpoint into `learner` (and the RNGs); None when there is none."""
        restored = restore_latest(self.dir, learner) if self.resume else None
        if restored is not None:  # metrics rows past the checkpoint are redone
            rewrite_jsonl(self.metrics, [r for r in read_jsonl(self.metrics) if r["step"] <= restored[0]])
        return restored

    def begin(self, first_eval: Callable[[], dict[str, Any]]) -> Progress:
        """A fresh start: evaluate the warm start (step 0) and write the first metrics row."""
        self.metrics.unlink(missing_ok=True)
        progress = Progress(warm_start_time_s=time.time() - self.started)
        first = first_eval()
        progress.curve.append(first)
        progress.warm_start_success = first["success"]
        progress.wall_time_s = time.time() - self.started
        progress.cpu_time_s = time.process_time() - self.started_cpu
        append_jsonl(self.metrics, {"step": 0, "eval": first})
        self.trackers.log({"step": 0, "eval": first})
        return progress

    def log(self, row: dict[str, Any]) -> None:
        append_jsonl(self.metrics, row)
        self.trackers.log(row)

    def save_rollouts(self, batch: RolloutBatch, done: int) -> None:
        every = self.cfg.run.save_rollouts_every
        if every and done % every == 0:
            sample = select_groups(batch, self.cfg.run.rollout_sample_groups)
            save_rollouts(sample, self.dir / "rollouts" / f"step-{done:06d}.pt", done)

    def checkpoint(self, done: int, learner: Learner, progress: Progress) -> None:
        overdue = self.timed_checkpoints and time.monotonic() - self.last_save >= RL_CHECKPOINT_SECONDS
        if done % self.cfg.run.checkpoint_every == 0 or done == self.cfg.rl.steps or overdue:
            state = TrainState(done, learner.model_state(), learner.optimizer_state(),
                               learner.scheduler.state_dict(), progress.to_dict())
            save_checkpoint(self.dir, state)
            self.last_save = time.monotonic()

    def finish(self, policy: Policy, record: RunRecord) -> RunRecord:
        with atomic_dir(self.dir / "final_policy") as tmp:
            policy.save(tmp)
        record.save(self.dir)
        return record
