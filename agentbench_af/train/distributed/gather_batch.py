"""One `RolloutBatch` from the ranks' shares of a data-parallel step, for the diagnostics rank 0 records.

`rollout.concat.concat_batches` stacks the shares in rank order: with contiguous prompt shares, the result
has the rows, trajectories and groups of the one-process batch.
Left out: gathering every step (only the first and the final batch are gathered, for the record).
"""

from __future__ import annotations

from agentbench_af.rollout.batch import RolloutBatch
from agentbench_af.rollout.concat import concat_batches
from agentbench_af.train.distributed.ranks import Ranks, gather_to_main


def gather_batch(batch: RolloutBatch, ranks: Ranks, pad_token_id: int) -> RolloutBatch | None:
    """The whole step's batch on rank 0 (None on the other ranks); `batch` itself for one process."""
    if not ranks.active:
        return batch
    shares = gather_to_main(batch.to("cpu"), ranks)
    return concat_batches(shares, pad_token_id) if shares is not None else None
