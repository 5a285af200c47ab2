"""Credit assignment on one rank's share of a data-parallel batch, equal to the one-process credit.

Group statistics (grpo, rloo, gigpo-step) and per-trajectory ActFocus weights need nothing from other
ranks, since a prompt's rollouts stay on one rank. A method that reads a batch statistic (gae's whitening,
top-entropy's quantile, STEER's min-max range, a plugin's own) takes it through `credit.reduce`'s
`batch_reduce()`; here that reduction is `RanksReduce`, which sums (max, min, concatenates) over every
rank, so the statistic is the one-process statistic by construction, whatever the method's name.
Left out: reductions for methods that bypass `batch_reduce()` (they see the rank's share).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from agentbench_af.credit import AdvantageOutput, CreditConfig, compute_advantages, compute_token_weights
from agentbench_af.credit.reduce import LOCAL, BatchReduce, using_reduce
from agentbench_af.rollout.batch import RolloutBatch
from agentbench_af.train.distributed.ranks import Ranks, all_reduce, gather_objects


@dataclass(frozen=True)
class RanksReduce:
    """`BatchReduce` over the ranks of a data-parallel run (collectives: every rank must call alike)."""

    ranks: Ranks

    def sum(self, x: torch.Tensor) -> torch.Tensor:
        return all_reduce(x, self.ranks, "sum")

    def max(self, x: torch.Tensor) -> torch.Tensor:
        return all_reduce(x, self.ranks, "max")

    def min(self, x: torch.Tensor) -> torch.Tensor:
        return all_reduce(x, self.ranks, "min")

    def cat(self, x: torch.Tensor) -> tuple[torch.Tensor, int]:
        every = gather_objects(x.detach().cpu(), self.ranks)  # world x (M_r,)
        offset = sum(e.numel() for e in every[:self.ranks.rank])
        return torch.cat(every).to(x.device), offset


def ranks_reduce(ranks: Ranks) -> BatchReduce:
    """The batch reduction of `ranks`: `LOCAL` on one process, `RanksReduce` otherwise."""
    return RanksReduce(ranks) if ranks.active else LOCAL


def rank_advantages(batch: RolloutBatch, cfg: CreditConfig, ranks: Ranks) -> AdvantageOutput:
    """`compute_advantages` on this rank's share, with batch statistics over every rank."""
    with using_reduce(ranks_reduce(ranks)):
        return compute_advantages(batch, cfg)


def rank_token_weights(batch: RolloutBatch, cfg: CreditConfig, ranks: Ranks) -> torch.Tensor:
    """`compute_token_weights` on this rank's share, with batch statistics over every rank."""
    with using_reduce(ranks_reduce(ranks)):
        return compute_token_weights(batch, cfg)
