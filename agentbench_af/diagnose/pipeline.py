"""From rollout batches to the diagnostic's files: the report, the plots and the token page.

    d = diagnose_batches([(step, batch), ...], out_dir, texts, meta={"env": ...}, title="FrozenLake-4x4-v0",
                         lm=policy.lm, temperature=1.0, device="cpu", format_role="reasoning")
    d.headline.ratio; d.stats.sources["old"].bottleneck_ratio; d.written   # the last batch's numbers; the files
The headline (`headline.py`) is measured on the last batch only, with gradients of `lm` (without `lm`:
its correlations only); the secondary |c| numbers on every batch.
Files in out_dir: bottleneck.json / bottleneck.md (the last batch; its meta lists the ratio per step),
bottleneck-shares and bottleneck-energy (.png/.svg), bottleneck-ratio (.png/.svg, only with two or more
steps) and tokens.html (the last batch, shaded by |c| of the `old` energy). Batches may be given lazily
(an iterator): only the last one is kept. Left out: pooling several steps into one set of numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import nn

from agentbench_af.diagnose import plots
from agentbench_af.diagnose.headline import GramStore, HeadlineStats, compute_headline
from agentbench_af.diagnose.html import TokenTexts, write_html
from agentbench_af.diagnose.report import write_report
from agentbench_af.diagnose.stats import BottleneckStats, compute_bottleneck
from agentbench_af.diagnose.tokens import token_contributions
from agentbench_af.rollout.batch import RolloutBatch

PAGE_SOURCE = "old"  # the energy whose |c| shades the token page


@dataclass(frozen=True)
class Diagnosis:
    step: int | None  # the step of the batch the report describes (None: not from a training run)
    stats: BottleneckStats
    headline: HeadlineStats
    history: list[tuple[int, BottleneckStats]]  # every step's stats, in order (empty without steps)
    written: list[Path]


def _ratio_rows(history: list[tuple[int, BottleneckStats]]) -> list[dict[str, Any]]:
    return [{"step": step, **{name: src.bottleneck_ratio for name, src in st.sources.items()}} for step, st in history]


def write_outputs(out_dir: Path, batch: RolloutBatch, stats: BottleneckStats, texts: TokenTexts, *,
                  step: int | None, meta: dict[str, Any], history: list[tuple[int, BottleneckStats]],
                  title: str, max_groups: int = 8, headline: HeadlineStats | None = None) -> list[Path]:
    """Report, plots and token page of one batch (and the ratio plot of `history` when it has >= 2 steps)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = list(write_report(stats, out_dir, step=step, meta=meta, title=f"Action Bottleneck: {title}",
                                headline=headline).values())
    written += plots.plot_shares(stats, out_dir, title=title)
    written += plots.plot_energy(batch, out_dir, sources=list(stats.sources))
    if len(history) >= 2:
        written += plots.plot_ratio_over_steps(history, out_dir, title=title)
    abs_c = token_contributions(batch, PAGE_SOURCE).abs()  # (B, T)
    written.append(write_html(out_dir / "tokens.html", batch, abs_c, texts, source=PAGE_SOURCE,
                              title=f"Action Bottleneck tokens: {title}", max_groups=max_groups))
    return written


def diagnose_batches(batches: Iterable[tuple[int | None, RolloutBatch]], out_dir: Path, texts: TokenTexts, *,
                     meta: dict[str, Any], title: str, null_permutations: int = 16, seed: int = 0,
                     prepare: Callable[[RolloutBatch], RolloutBatch] | None = None, lm: nn.Module | None = None,
                     temperature: float = 1.0, device: Any = "cpu", format_role: str = "reasoning",
                     headline_settings: dict[str, Any] | None = None, grams: GramStore | None = None,
                     on_group: Callable[[int, int], object] | None = None) -> Diagnosis:
    """Stats of every batch (after `prepare`, e.g. adding reference log-probs); the headline and the files
    of the last. `headline_settings`: keyword arguments of `compute_headline` (max_groups, shuffles, ...);
    `grams` and `on_group` go to it too (a resumable headline, its progress)."""
    history: list[tuple[int, BottleneckStats]] = []
    last: tuple[int | None, RolloutBatch, BottleneckStats] | None = None
    for step, batch in batches:
        batch = prepare(batch) if prepare is not None else batch
        stats = compute_bottleneck(batch, null_permutations=null_permutations, seed=seed)
        if step is not None:
            history.append((step, stats))
        last = (step, batch, stats)
    if last is None:
        raise ValueError("no rollout batch to diagnose")
    step, batch, stats = last
    headline = compute_headline(batch, lm, temperature, device, format_role, **(headline_settings or {}),
                                grams=grams, on_group=on_group)
    meta = {**meta, "ratio_by_step": _ratio_rows(history)} if history else meta
    written = write_outputs(out_dir, batch, stats, texts, step=step, meta=meta, history=history, title=title,
                            headline=headline)
    return Diagnosis(step, stats, headline, history, written)
