"""Batch reductions: how a credit method or policy loss takes a statistic over the whole batch.

A method that needs a batch statistic (a mean, a quantile, a min-max range, a top-k) computes it
through a `BatchReduce`, never on its own tensors alone: on one process the reduction is the identity
(`LOCAL`); under data parallelism the harness supplies one that reduces over every rank
(`train.distributed.credit.RanksReduce`), so the statistic is global by construction, with no
special case per method name.

    reduce = batch_reduce()                 # inside fn(batch, cfg): the reduction the harness set
    n, total = reduce.sum(torch.stack([x.new_tensor(x.numel()), x.sum()]))
    every, offset = reduce.cat(x)           # every rank's x in rank order; this rank's starts at offset

Credit functions keep their `fn(batch, cfg)` signature and read the reduction with `batch_reduce()`
(set by `using_reduce` around the dispatch); policy losses receive it as an argument.
Left out: reductions over subgroups of ranks (every statistic here is over the whole batch).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator
from typing import Protocol

import torch


class BatchReduce(Protocol):
    """Reductions over the batch's shares (one share per rank, in rank order)."""

    def sum(self, x: torch.Tensor) -> torch.Tensor: ...  # elementwise sum over shares, x's shape

    def max(self, x: torch.Tensor) -> torch.Tensor: ...  # elementwise max over shares

    def min(self, x: torch.Tensor) -> torch.Tensor: ...  # elementwise min over shares

    def cat(self, x: torch.Tensor) -> tuple[torch.Tensor, int]: ...  # (M,) -> (sum M_r,), this share's offset


class LocalReduce:
    """One process: every reduction is the identity (the batch is this process's share)."""

    def sum(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def max(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def min(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def cat(self, x: torch.Tensor) -> tuple[torch.Tensor, int]:
        return x, 0


LOCAL = LocalReduce()


class RefusedReduce:
    """A share that is not the batch (a micro-batch of gradient accumulation, `rl.micro_batch_rows`): any
    batch statistic raises `ValueError` with `why`, since it would be the share's alone."""

    def __init__(self, why: str) -> None:
        self.why = why

    def _refuse(self, x: torch.Tensor) -> torch.Tensor:
        raise ValueError(self.why)

    sum = max = min = _refuse

    def cat(self, x: torch.Tensor) -> tuple[torch.Tensor, int]:
        raise ValueError(self.why)
_CURRENT: contextvars.ContextVar[BatchReduce] = contextvars.ContextVar("batch_reduce", default=LOCAL)


def batch_reduce() -> BatchReduce:
    """The reduction in force: `LOCAL` unless the harness set one with `using_reduce`."""
    return _CURRENT.get()


@contextlib.contextmanager
def using_reduce(reduce: BatchReduce) -> Iterator[None]:
    """Run the enclosed credit dispatch with `reduce` as the batch reduction."""
    token = _CURRENT.set(reduce)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def whiten(x: torch.Tensor, eps: float = 1e-8, reduce: BatchReduce | None = None) -> torch.Tensor:
    """(M,) -> (M,): (x - mean) / sqrt(var + eps) with the mean and Bessel-corrected variance of every
    share's entries; fewer than 2 entries in all give 0. On one process (`LocalReduce`) the statistics are
    torch's own in x's dtype, bit for bit what one-process runs have always computed (the committed
    records'); over several shares they are float64 sums, equal to float rounding."""
    reduce = reduce or batch_reduce()
    if isinstance(reduce, LocalReduce):
        if x.numel() < 2:
            return torch.zeros_like(x)
        return (x - x.mean()) * torch.rsqrt(x.var(correction=1) + eps)
    xd = x.double()  # (M,)
    n, total, squares = (float(v) for v in reduce.sum(torch.stack([xd.new_tensor(float(x.numel())), xd.sum(), (xd * xd).sum()])))
    if n < 2:
        return torch.zeros_like(x)
    mean = total / n
    var = max(squares - n * mean * mean, 0.0) / (n - 1)
    return ((xd - mean) / math.sqrt(var + eps)).to(x.dtype)


def top_fraction(scores: torch.Tensor, fraction: float, reduce: BatchReduce | None = None) -> torch.Tensor:
    """(M,) scores -> (M,) bool: this share's entries among the ceil(fraction * M_all) highest scores of
    every share (at least one, ties broken by position, rank 0's entries first)."""
    reduce = reduce or batch_reduce()
    every, offset = reduce.cat(scores.detach().float())  # (M_all,)
    keep = torch.zeros(scores.shape, dtype=torch.bool, device=scores.device)
    if every.numel() == 0:
        return keep
    k = min(every.numel(), max(1, math.ceil(fraction * every.numel() - 1e-9)))
    order = torch.argsort(every, descending=True, stable=True)[:k]  # (k,) positions in every share
    mine = order[(order >= offset) & (order < offset + scores.numel())] - offset  # (k_r,)
    keep[mine.to(scores.device)] = True
    return keep
