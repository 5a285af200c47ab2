"""The diagnostic in a run record: the action ratio per energy source of one batch, and the record's field.

    snap = bottleneck_snapshot(batch, step=0)          # BottleneckSnapshot; .to_dict() is plain JSON
    record.bottleneck = record_bottleneck(warm.to_dict(), final.to_dict())
    record_ratio(record.bottleneck, "final", "old")    # float | None

Record layout: {"sources": ["old", "entropy"], "warm_start": snapshot dict, "final": snapshot dict}.
A ratio that is undefined (no group with reward variance, no action tokens, ...) is None with a `reason`;
a batch the diagnostic cannot read (ValueError) gives None ratios and the error as the reason, never a
crash of the run. Left out: the other roles, per-turn numbers and correlations (`agentbench-af diagnose`
writes those).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from agentbench_af.diagnose.report import undefined_reason
from agentbench_af.diagnose.stats import compute_bottleneck
from agentbench_af.rollout.batch import RolloutBatch

RECORD_SOURCES: tuple[str, ...] = ("old", "entropy")  # both are in every batch: no extra forward pass
RECORD_NULL_PERMUTATIONS = 16


@dataclass(frozen=True)
class SourceSnapshot:
    ratio: float | None  # signal share / token share of the action tokens
    null_ratio: float | None  # the same with rewards shuffled within groups
    action_token_share: float | None
    action_signal_share: float | None
    reason: str | None = None  # why `ratio` is None


@dataclass(frozen=True)
class BottleneckSnapshot:
    step: int  # RL updates before the batch was sampled
    n_groups: int
    n_groups_used: int  # groups with reward variance (the ones the ratio is measured on)
    n_generated_tokens: int
    sources: dict[str, SourceSnapshot]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BottleneckSnapshot:
        sources = {k: SourceSnapshot(**v) for k, v in d["sources"].items()}
        return cls(**{**{k: v for k, v in d.items() if k != "sources"}, "sources": sources})


def bottleneck_snapshot(batch: RolloutBatch, step: int, sources: Sequence[str] = RECORD_SOURCES,
                        null_permutations: int = RECORD_NULL_PERMUTATIONS) -> BottleneckSnapshot:
    """The action ratio of `batch` per source; None ratios with a reason where undefined."""
    try:
        stats = compute_bottleneck(batch, sources, null_permutations=null_permutations)
    except ValueError as exc:
        empty = SourceSnapshot(None, None, None, None, f"diagnostic failed: {exc}")
        return BottleneckSnapshot(step, int(batch.traj_group.unique().numel()), 0, int(batch.response_mask.sum()),
                                  {name: empty for name in sources})
    no_variance = f"no group with reward variance ({stats.n_groups} groups)" if stats.n_groups_used == 0 else None
    out = {}
    for name, src in stats.sources.items():
        action = src.overall.roles["action"]
        reason = undefined_reason(src)
        out[name] = SourceSnapshot(src.bottleneck_ratio, action.null_ratio, action.token_share, action.signal_share,
                                   reason and (no_variance or reason))
    return BottleneckSnapshot(step, stats.n_groups, stats.n_groups_used, stats.n_generated_tokens, out)


def record_bottleneck(warm_start: dict[str, Any] | None, final: BottleneckSnapshot) -> dict[str, Any]:
    """The record's `bottleneck` field. `warm_start` is a snapshot dict (None: not measured, e.g. a run
    resumed from a checkpoint written before the field existed; with 0 RL steps the final batch is the
    warm-start policy's, so it serves as both)."""
    if warm_start is None and final.step == 0:
        warm_start = final.to_dict()
    return {"sources": list(final.sources), "warm_start": warm_start, "final": final.to_dict()}


def record_ratio(bottleneck: dict[str, Any] | None, when: str, source: str = "old") -> float | None:
    """The action ratio stored in a record's `bottleneck` field at `when` ("warm_start" or "final")."""
    snap = (bottleneck or {}).get(when) or {}
    return (snap.get("sources") or {}).get(source, {}).get("ratio")
