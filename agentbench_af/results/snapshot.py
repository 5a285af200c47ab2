"""The diagnostic in a run record: the headline and the action ratio per energy source of one batch.

    snap = bottleneck_snapshot(batch, step=0, lm=policy.lm, temperature=1.0, device="cpu",
                               format_role="reasoning", settings={"max_groups": 16})
    record.bottleneck = record_bottleneck(warm.to_dict(), final)
    record_ratio(record.bottleneck, "final", "old")    # the secondary |c| ratio: float | None
    record_headline(record.bottleneck, "final")        # the headline dict (HeadlineStats without groups) | None

Record layout: {"sources": ["old", "entropy"], "warm_start": snapshot dict, "final": snapshot dict}; a
snapshot holds `headline` (the reward-reactive headline of `headline.py`: ratio, null, interval, per-role
gradient signal and Pearson correlations; None without a policy) and, per energy source, the secondary
|c| ratio with its null, the action shares and each role's Pearson(R, role mean energy). Records written
before the headline existed lack `headline` and `pearson`; they read back as None.
A value that is undefined (no group with reward variance, no action tokens, ...) is None with a `reason`;
a batch the diagnostic cannot read (ValueError), or a headline whose gradients fail (RuntimeError, e.g.
out of memory; IndexError: token ids beyond the model's vocabulary), gives None values and the error as
the reason, never a crash of the run.
Left out: per-turn numbers (`agentbench-af diagnose` writes those).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from torch import nn

from agentbench_af.diagnose.headline import compute_headline
from agentbench_af.diagnose.report import undefined_reason
from agentbench_af.diagnose.stats import compute_bottleneck
from agentbench_af.diagnose.tokens import ROLE_KEYS
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
    pearson: dict[str, float | None] | None = None  # role -> mean over prompts of Pearson(R, role mean energy)


@dataclass(frozen=True)
class BottleneckSnapshot:
    step: int  # RL updates before the batch was sampled
    n_groups: int
    n_groups_used: int  # groups with reward variance (the ones the ratio is measured on)
    n_generated_tokens: int
    sources: dict[str, SourceSnapshot]
    headline: dict[str, Any] | None = None  # HeadlineStats.to_dict(with_groups=False)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BottleneckSnapshot:
        sources = {k: SourceSnapshot(**v) for k, v in d["sources"].items()}
        return cls(**{**{k: v for k, v in d.items() if k != "sources"}, "sources": sources})


def _headline(batch: RolloutBatch, lm: nn.Module | None, temperature: float, device, format_role: str,
              settings: dict[str, Any]) -> dict[str, Any] | None:
    if lm is None:
        return None
    try:
        return compute_headline(batch, lm, temperature, device, format_role, **settings).to_dict(with_groups=False)
    except (ValueError, RuntimeError, IndexError) as exc:
        return {"ratio": None, "null": None, "ci_low": None, "ci_high": None,
                "reason": f"headline failed: {str(exc).splitlines()[0] if str(exc) else exc!r}"}


def bottleneck_snapshot(batch: RolloutBatch, step: int, sources: Sequence[str] = RECORD_SOURCES,
                        null_permutations: int = RECORD_NULL_PERMUTATIONS, lm: nn.Module | None = None,
                        temperature: float = 1.0, device: Any = "cpu", format_role: str = "reasoning",
                        settings: dict[str, Any] | None = None) -> BottleneckSnapshot:
    """The headline of `batch` under `lm` (None: no headline) and the action ratio per source; None values
    with a reason where undefined. `settings`: keyword arguments of `compute_headline` (max_groups,
    shuffles, resamples, confidence, seed)."""
    headline = _headline(batch, lm, temperature, device, format_role, settings or {})
    try:
        stats = compute_bottleneck(batch, sources, null_permutations=null_permutations)
    except ValueError as exc:
        empty = SourceSnapshot(None, None, None, None, f"diagnostic failed: {exc}")
        return BottleneckSnapshot(step, int(batch.traj_group.unique().numel()), 0, int(batch.response_mask.sum()),
                                  {name: empty for name in sources}, headline)
    no_variance = f"no group with reward variance ({stats.n_groups} groups)" if stats.n_groups_used == 0 else None
    out = {}
    for name, src in stats.sources.items():
        action = src.overall.roles["action"]
        reason = undefined_reason(src)
        out[name] = SourceSnapshot(src.bottleneck_ratio, action.null_ratio, action.token_share, action.signal_share,
                                   reason and (no_variance or reason),
                                   {k: src.overall.roles[k].pearson for k in ROLE_KEYS})
    return BottleneckSnapshot(step, stats.n_groups, stats.n_groups_used, stats.n_generated_tokens, out, headline)


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


def record_headline(bottleneck: dict[str, Any] | None, when: str) -> dict[str, Any] | None:
    """The headline dict stored in a record's `bottleneck` field at `when` (None: absent, e.g. an older record)."""
    snap = (bottleneck or {}).get(when) or {}
    return snap.get("headline")
