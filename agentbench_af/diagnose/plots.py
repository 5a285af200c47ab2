"""Plots of the diagnostic (matplotlib, Agg backend), each saved as PNG and SVG; each returns the paths.

    plot_shares(stats, out_dir)                 # bottleneck-shares: token vs signal share per role, per source
    plot_energy(batch, out_dir)                 # bottleneck-energy: energy histograms per role, per source
    plot_ratio_over_steps(history, out_dir)     # bottleneck-ratio: action (and reasoning) ratio vs step
`history` is a list of (step, BottleneckStats), e.g. from `report.load_report` on each step's JSON.
SVGs are deterministic (fixed hash salt, no date). Left out: interactive plots and confidence bands.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from agentbench_af.diagnose.stats import BottleneckStats  # noqa: E402
from agentbench_af.diagnose.tokens import (  # noqa: E402
    ROLE_KEYS,
    available_sources,
    flat_energy,
    token_table,
)
from agentbench_af.rollout.batch import RolloutBatch  # noqa: E402

ROLE_COLOURS = {"reasoning": "#1f77b4", "action": "#2ca02c", "format": "#9467bd"}  # same as html.py
TAIL_QUANTILE = 0.995  # energy histograms: values above this quantile go into the last bin


def _save(fig, out_dir: str | Path, stem: str) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.png", out / f"{stem}.svg"]
    with matplotlib.rc_context({"svg.hashsalt": "agentbench-af"}):
        fig.savefig(paths[0], dpi=120, bbox_inches="tight", metadata={"Software": None})
        fig.savefig(paths[1], bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    return paths


def _nan(x: float | None) -> float:
    return math.nan if x is None else x


def plot_shares(stats: BottleneckStats, out_dir: str | Path, stem: str = "bottleneck-shares",
                title: str = "") -> list[Path]:
    """Grouped bars per role (token share, signal share), one panel per energy source, ratios on top."""
    if not stats.sources:
        raise ValueError("stats has no energy source to plot")
    names = list(stats.sources)
    fig, axes = plt.subplots(1, len(names), figsize=(3.6 * len(names), 3.6), squeeze=False, sharey=True)
    x = np.arange(len(ROLE_KEYS))
    for ax, name in zip(axes[0], names, strict=True):
        roles = stats.sources[name].overall.roles
        tok = [100 * _nan(roles[k].token_share) for k in ROLE_KEYS]
        sig = [100 * _nan(roles[k].signal_share) for k in ROLE_KEYS]
        ax.bar(x - 0.2, tok, 0.4, label="token share", color="#bbbbbb", edgecolor="#555555")
        bars = ax.bar(x + 0.2, sig, 0.4, label="signal share", color=[ROLE_COLOURS[k] for k in ROLE_KEYS])
        ax.bar_label(bars, labels=[f"×{roles[k].ratio:.2f}" if roles[k].ratio is not None else "–"
                                   for k in ROLE_KEYS], fontsize=7, padding=2)
        null = [100 * _nan(roles[k].null_ratio) * _nan(roles[k].token_share) for k in ROLE_KEYS]
        if not all(math.isnan(v) for v in null):
            ax.scatter(x + 0.2, null, marker="_", s=260, linewidths=2, color="black", zorder=3,
                       label="signal share, rewards shuffled")
        ax.set_xticks(x, ROLE_KEYS)
        ax.set_title(f"energy `{name}`", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("share (%)  [×ratio = signal / token share]")
    axes[0][0].set_ylim(0, 118)
    axes[0][0].legend(fontsize=7, loc="upper left")
    used = f"{stats.n_groups_used}/{stats.n_groups} groups with reward variance"
    fig.suptitle(f"{title + ': ' if title else ''}token vs signal share ({used})", fontsize=10)
    return _save(fig, out_dir, stem)


def plot_energy(batch: RolloutBatch, out_dir: str | Path, sources: Sequence[str] | None = None,
                stem: str = "bottleneck-energy", bins: int = 40) -> list[Path]:
    """Density histograms of the generated tokens' energy per role, one panel per source."""
    table = token_table(batch)
    if table.n_tokens == 0:
        raise ValueError("the batch has no generated tokens to plot")
    names = list(available_sources(batch) if sources is None else sources)
    fig, axes = plt.subplots(1, len(names), figsize=(3.8 * len(names), 3.2), squeeze=False)
    role = table.role.cpu().numpy()
    for ax, name in zip(axes[0], names, strict=True):
        e = flat_energy(batch, table, name).cpu().numpy()
        hi = float(np.quantile(e, TAIL_QUANTILE))
        lo = float(e.min())
        edges = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
        for k, key in enumerate(ROLE_KEYS):
            part = np.clip(e[role == k], lo, edges[-1])
            if part.size:
                ax.hist(part, edges, density=True, histtype="step", linewidth=1.4, color=ROLE_COLOURS[key],
                        label=f"{key} (n={part.size}, mean {part.mean():.2f})")
        ax.set_title(f"energy `{name}`", fontsize=9)
        ax.set_xlabel("energy (last bin: >= 99.5th percentile)" if hi < e.max() else "energy", fontsize=8)
        ax.legend(fontsize=6)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("density")
    return _save(fig, out_dir, stem)


def plot_ratio_over_steps(history: Sequence[tuple[int, BottleneckStats]], out_dir: str | Path,
                          stem: str = "bottleneck-ratio", title: str = "") -> list[Path]:
    """Action ratio (solid) and reasoning ratio (dashed) per energy source vs training step; y = 1 marked."""
    if not history:
        raise ValueError("history is empty: pass a list of (step, BottleneckStats)")
    history = sorted(history, key=lambda p: p[0])
    steps = [s for s, _ in history]
    names = list(dict.fromkeys(n for _, st in history for n in st.sources))
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for i, name in enumerate(names):
        for role, style, marker in (("action", "-", "o"), ("reasoning", "--", "s")):
            ys = [_nan(st.sources[name].overall.roles[role].ratio) if name in st.sources else math.nan
                  for _, st in history]
            ax.plot(steps, ys, style, marker=marker, ms=3, color=f"C{i}", label=f"{role} ratio, `{name}`")
    ax.axhline(1.0, color="black", linewidth=0.8, alpha=0.6)
    ax.set_xlabel("RL step")
    ax.set_ylabel("signal share / token share")
    ax.set_title(f"{title + ': ' if title else ''}Action Bottleneck ratio over training", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, handlelength=3.5, loc="best")
    return _save(fig, out_dir, stem)
