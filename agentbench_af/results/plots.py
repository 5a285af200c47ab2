"""Plots from run records (matplotlib, Agg): success curves per environment (one line per model and
method, mean ± SE band over seeds) and a bar chart of the final-step table. PNG and SVG.
Left out: interactive plots and smoothing (curves show the evaluated points as they are)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# deterministic SVG element ids, so regenerated plots are byte-identical
matplotlib.rcParams["svg.hashsalt"] = "agentbench-af"
import pandas as pd  # noqa: E402

from agentbench_af.results.record import RunRecord  # noqa: E402
from agentbench_af.results.table import SuccessTable  # noqa: E402


def curves_frame(record_paths: list[Path]) -> pd.DataFrame:
    """Long form: env, model, method, config_hash, seed, step, success."""
    rows = []
    for path in record_paths:
        r = RunRecord.load(path)
        if r.status != "completed":
            continue
        for point in r.curve:
            rows.append({"env": r.env_id, "model": r.model, "method": r.method, "config_hash": r.config_hash,
                         "seed": r.seed, "step": point["step"], "success": point["success"]})
    return pd.DataFrame(rows, columns=["env", "model", "method", "config_hash", "seed", "step", "success"])


def _save(fig, out_dir: Path, stem: str) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{stem}.png", out_dir / f"{stem}.svg"]
    fig.savefig(paths[0], dpi=120, bbox_inches="tight", metadata={"Software": None})
    fig.savefig(paths[1], bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    return paths


def plot_curves(curves: pd.DataFrame, out_dir: str | Path) -> list[Path]:
    """One figure per environment: success vs RL step, mean ± SE over seeds."""
    written = []
    for env, part in curves.groupby("env", sort=True):
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
        n_hashes = part.groupby(["model", "method"])["config_hash"].nunique()
        for (model, method, h), line in part.groupby(["model", "method", "config_hash"], sort=True):
            agg = line.groupby("step")["success"].agg(["mean", "std", "count"]).reset_index()
            se = (agg["std"].fillna(0) / agg["count"].map(math.sqrt)) * 100
            mean = agg["mean"] * 100
            label = f"{model} {method}" + (f" [config {h}]" if n_hashes[(model, method)] > 1 else "")
            (drawn,) = ax.plot(agg["step"], mean, marker="o", ms=3, label=f"{label} (n={line['seed'].nunique()})")
            ax.fill_between(agg["step"], mean - se, mean + se, alpha=0.2, color=drawn.get_color(), linewidth=0)
        ax.set_title(f"{env}: evaluation success")
        ax.set_xlabel("RL step")
        ax.set_ylabel("success (%)")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
        written += _save(fig, Path(out_dir), f"curve-{env}")
    return written


def plot_final_bars(table: SuccessTable, out_dir: str | Path) -> list[Path]:
    """Grouped bars of final-step success per environment (one bar per model/method row), SE error bars."""
    stats = table.stats
    envs = sorted(stats["env"].unique())
    rows = list(dict.fromkeys(stats["row"]))
    width = 0.8 / max(len(rows), 1)
    fig, ax = plt.subplots(figsize=(max(6.4, 1.6 * len(envs)), 4.2))
    for i, row in enumerate(rows):
        part = stats[stats["row"] == row].set_index("env")
        xs = [envs.index(e) + (i - (len(rows) - 1) / 2) * width for e in part.index]
        bars = ax.bar(xs, part["mean"] * 100, width, yerr=part["se"].fillna(0) * 100, capsize=2, label=row,
                      color=f"C{i % 10}")
        ax.bar_label(bars, labels=[f"n={int(n)}" for n in part["n"]], fontsize=5, padding=2)
    ax.set_xticks(range(len(envs)), envs, rotation=15, fontsize=8)
    ax.set_ylabel("final-step success (%)")
    ax.set_ylim(0, 108)
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, Path(out_dir), "final-success")
