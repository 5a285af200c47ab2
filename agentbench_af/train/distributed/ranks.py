"""Ranks of a data-parallel run and the few collectives the training loop needs.

A run launched by `torchrun` (which sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) joins a
process group: gloo on CPU, nccl on CUDA, one device per rank (`cuda:LOCAL_RANK`). Without those variables,
or with WORLD_SIZE=1, everything here is a no-op and the run is the plain one-process run.

Every rank takes a contiguous block of the step's prompts (`share`), so a prompt's G rollouts stay on one
rank and the union over ranks is the one-process prompt list. `UpdateSync` is what `ppo_update` asks of
data parallelism: the global loss denominators (so that DDP's gradient mean over ranks equals the gradient
of one process on the whole batch) and the same number of minibatches on every rank.
Left out: tensor and pipeline parallelism, elastic membership changes during a run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

import numpy as np
import torch
import torch.distributed as dist

T = TypeVar("T")


@dataclass(frozen=True)
class Ranks:
    """This process's place in the run: rank, world size and local rank (its device index on the node)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def active(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


SINGLE = Ranks()


def ranks_from_env(environ: dict[str, str] | None = None) -> Ranks:
    """The ranks torchrun announces in RANK / WORLD_SIZE / LOCAL_RANK; one process when they are absent."""
    env = os.environ if environ is None else environ
    try:
        world = int(env.get("WORLD_SIZE", "1"))
        rank = int(env.get("RANK", "0"))
        local = int(env.get("LOCAL_RANK", str(rank)))
    except ValueError as exc:
        raise ValueError(f"RANK, WORLD_SIZE and LOCAL_RANK must be integers: {exc}") from exc
    if world < 1 or not 0 <= rank < world or local < 0:
        raise ValueError(f"bad torchrun ranks: RANK={rank} WORLD_SIZE={world} LOCAL_RANK={local}")
    return Ranks(rank, world, local)


def check_world(cfg, ranks: Ranks) -> None:
    """Raise ValueError (one line) when `ranks` cannot share `cfg`'s batch: every rank takes the same number
    of prompts (`rl.prompts_per_step` a multiple of the world size) and of minibatches."""
    if not ranks.active:
        return
    if cfg.rl.prompts_per_step % ranks.world_size:
        raise ValueError(f"rl.prompts_per_step={cfg.rl.prompts_per_step} does not split evenly over "
                         f"{ranks.world_size} processes; use a world size that divides it")
    if cfg.rl.minibatches > cfg.rl.prompts_per_step // ranks.world_size * cfg.rollout.group_size:
        raise ValueError(f"rl.minibatches={cfg.rl.minibatches} is more than the {cfg.rl.prompts_per_step // ranks.world_size}"
                         f" x {cfg.rollout.group_size} rollouts of each of {ranks.world_size} processes")


def backend_for(device: torch.device) -> str:
    return "nccl" if device.type == "cuda" else "gloo"


def start(device: torch.device, timeout_s: float = 7200.0) -> tuple[Ranks, torch.device]:
    """Join the process group torchrun set up (a no-op for one process); returns the ranks and this
    rank's device (`cuda:LOCAL_RANK` when `device` is CUDA). `timeout_s` bounds every collective, among
    them the other ranks' wait while rank 0 builds the warm start (SFT) before training."""
    ranks = ranks_from_env()
    if not ranks.active:
        return ranks, device
    if device.type == "cuda":
        device = torch.device("cuda", ranks.local_rank)
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group(backend_for(device), timeout=timedelta(seconds=timeout_s),
                                device_id=device if device.type == "cuda" else None)
    return ranks, device


def finish(ranks: Ranks) -> None:
    """Wait until every rank has finished the run (rank 0 writes the record and policy after the last
    collective), so that no rank tears the process group down while another still holds it: without it,
    gloo aborted a rank at exit ("terminate called without an active exception") in two of four
    test runs under CPU load."""
    if ranks.active and dist.is_initialized():
        dist.barrier()


def stop(ranks: Ranks) -> None:
    if ranks.active and dist.is_initialized():
        dist.destroy_process_group()


def share(items: list[T], ranks: Ranks, what: str = "rl.prompts_per_step") -> list[T]:
    """This rank's contiguous block of `items`; the world size must divide their number."""
    if len(items) % ranks.world_size:
        raise ValueError(f"{what}: {len(items)} items do not split evenly over {ranks.world_size} processes; "
                         "use a world size that divides it")
    per = len(items) // ranks.world_size
    return items[ranks.rank * per:(ranks.rank + 1) * per]


def _device() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")


def all_reduce(values: torch.Tensor, ranks: Ranks, op: str = "sum") -> torch.Tensor:
    """Sum (or max, min) of `values` over ranks, returned on `values`' device; identity for one process."""
    if not ranks.active:
        return values
    buf = values.detach().to(_device()).clone()
    dist.all_reduce(buf, op={"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}[op])
    return buf.to(values.device)


def gather_objects(obj: T, ranks: Ranks) -> list[T]:
    """Every rank's `obj`, in rank order (picklable objects; meant for small summaries)."""
    if not ranks.active:
        return [obj]
    out: list[Any] = [None] * ranks.world_size
    dist.all_gather_object(out, obj)
    return out


def broadcast_object(obj: T, ranks: Ranks) -> T:
    """Rank 0's `obj` on every rank."""
    if not ranks.active:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def barrier(ranks: Ranks) -> None:
    if ranks.active:
        dist.barrier()


def reduce_metrics(metrics: dict[str, float], ranks: Ranks) -> dict[str, float]:
    """Mean over ranks of each metric (`ratio_max`: the max). Every rank must pass the same keys.

    The losses are computed with global denominators, so their mean over ranks is the one-process loss;
    clip_frac, approx_kl and entropy are the mean of the ranks' token means (exact when ranks hold equal
    token counts)."""
    if not ranks.active or not metrics:
        return metrics
    keys = sorted(metrics)
    values = torch.tensor([metrics[k] for k in keys], dtype=torch.float64)
    summed = all_reduce(values, ranks) / ranks.world_size
    out = {k: float(v) for k, v in zip(keys, summed, strict=True)}
    if "ratio_max" in metrics:
        out["ratio_max"] = float(all_reduce(torch.tensor([metrics["ratio_max"]], dtype=torch.float64), ranks, "max")[0])
    return out


@dataclass(frozen=True)
class UpdateSync:
    """What `ppo_update` needs when ranks hold disjoint shares of one batch and DDP/FSDP2 averages their
    gradients: loss denominators counted over the global batch, divided by the world size, and exactly
    `minibatches` minibatches on every rank (each the rank's own slice of its share)."""

    ranks: Ranks

    def denominator(self, mask: torch.Tensor, agg: str) -> torch.Tensor:
        """(,) the number `agg_loss` divides by: the global count of masked tokens (token-mean) or of rows
        with a masked token (the seq-mean modes), over the world size, at least 1 / world size."""
        mask = mask.bool()
        counts = torch.stack([mask.sum(), (mask.sum(-1) > 0).sum()]).to(torch.float64)  # (2,)
        total = all_reduce(counts, self.ranks)
        count = total[0] if agg == "token-mean" else total[1]
        return (count.clamp(min=1) / self.ranks.world_size).to(torch.float32).to(mask.device)

    def total(self, x: torch.Tensor) -> torch.Tensor:
        """`x` summed over every rank (float64 counts)."""
        return all_reduce(x, self.ranks)

    def split(self, order: torch.Tensor, minibatches: int) -> list[torch.Tensor]:
        """`order` (B,) cut into exactly `minibatches` nonempty chunks; every rank must hold at least
        `minibatches` rows (checked collectively, so every rank raises the same error)."""
        fewest = int(all_reduce(torch.tensor([order.numel()]), self.ranks, "min")[0])
        if fewest < minibatches:
            raise ValueError(f"rl.minibatches={minibatches} but a rank holds only {fewest} samples this step; "
                             "use fewer minibatches or processes")
        return list(torch.tensor_split(order, minibatches))


def rank_seed(seed: int, ranks: Ranks) -> int:
    """A seed of this rank's own stream: `seed` itself on rank 0 (one process draws exactly what it drew
    before), a distinct derived seed on the others."""
    if ranks.rank == 0:
        return seed
    return int(np.random.SeedSequence([seed, ranks.rank]).generate_state(1)[0])


def broadcast_from_main(obj: T | None, ranks: Ranks, what: str) -> T:
    """Rank 0's `obj` on every rank (the others pass None); rank 0 must have one."""
    out = broadcast_object(obj, ranks)
    if out is None:
        raise RuntimeError(f"rank 0 broadcast no {what}")
    return out


def gather_to_main(obj: T, ranks: Ranks) -> list[T] | None:
    """Every rank's `obj` in rank order on rank 0, None elsewhere (picklable objects)."""
    if not ranks.active:
        return [obj]
    out: list[Any] | None = [None] * ranks.world_size if ranks.is_main else None
    dist.gather_object(obj, out, dst=0)
    return out


def reduce_row(row: dict[str, Any], turns: int, ranks: Ranks) -> dict[str, Any]:
    """A step's metrics row over all ranks: rollout success and return are means over every trajectory
    (ranks hold equal numbers), the valid rate a mean over every turn (`turns`: this rank's), token
    counts are sums, times the slowest rank's, update metrics `reduce_metrics`'. Only the keys of
    `bookkeeping.step_row` are merged; every rank returns the same row."""
    if not ranks.active:
        return row
    rows = gather_objects((row, turns), ranks)
    n_turns = sum(t for _, t in rows)
    merged = dict(row)
    merged["rollout_success"] = sum(r["rollout_success"] for r, _ in rows) / len(rows)
    merged["rollout_return"] = sum(r["rollout_return"] for r, _ in rows) / len(rows)
    merged["rollout_valid_rate"] = sum(r["rollout_valid_rate"] * t for r, t in rows) / max(n_turns, 1)
    merged["response_tokens"] = sum(r["response_tokens"] for r, _ in rows)
    merged["tokens_by_role"] = {k: sum(r["tokens_by_role"].get(k, 0) for r, _ in rows) for k in row["tokens_by_role"]}
    for key in ("time_rollout_s", "time_step_s"):
        merged[key] = max(r[key] for r, _ in rows)
    return merged
