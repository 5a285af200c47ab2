"""Plots for docs/why-rl-loses-ground.md: committed evaluation curves, and per-step health of new runs.

    python scripts/plot_why_rl_loses.py committed docs/figures/why-committed.png
    python scripts/plot_why_rl_loses.py health docs/figures/why-health.png LABEL=RUN_DIR ...

`committed` reads leaderboards/cpu-confirm and cpu-confirm-sudoku records (mean over seeds per method of
success at T = 1 and the valid-turn rate at each evaluation); `health` reads each run folder's
metrics.jsonl (the `health/` keys of `agentbench_af.train.bookkeeping.health` and the update's metrics).
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CELLS = [("cpu-confirm", "Sokoban-6x6-1box-v0", "tiny-0.2m"), ("cpu-confirm", "Sokoban-6x6-1box-v0", "tiny-0.7m"),
         ("cpu-confirm", "WebShop-mini-v0", "tiny-0.7m"), ("cpu-confirm-sudoku", "Sudoku-4x4-10clues-v0", "tiny-0.7m"),
         ("cpu-confirm", "FrozenLake-4x4-v0", "tiny-0.2m")]


def committed(out: Path) -> None:
    fig, axes = plt.subplots(2, len(CELLS), figsize=(4 * len(CELLS), 6.5), squeeze=False)
    for col, (board, env, model) in enumerate(CELLS):
        curves = collections.defaultdict(list)
        for f in sorted(Path("leaderboards", board, "runs").glob(f"{env}-*-{model}-s*/record.json")):
            rec = json.loads(f.read_text())
            label = f"{rec['method']} {rec['config']['rl']['lr']:g}"
            curves[label].append(rec["curve"])
        for label, runs in sorted(curves.items()):
            steps = [p["step"] for p in runs[0]]
            for row, key in enumerate(("success", "valid_rate")):
                ys = [sum(r[i][key] for r in runs) / len(runs) for i in range(len(steps))]
                axes[row][col].plot(steps, [100 * y for y in ys], marker="o", ms=3, label=label)
        axes[0][col].set_title(f"{env.split('-v0')[0]} {model}", fontsize=9)
        axes[1][col].set_xlabel("RL step")
    axes[0][0].set_ylabel("success % at T = 1 (mean of 6 seeds)")
    axes[1][0].set_ylabel("valid turns % at T = 1")
    axes[0][-1].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


HEALTH = ["rollout_success", "health/invalid_rate", "health/z_invalid", "health/no_success_groups",
          "health/zero_adv_groups", "health/entropy_reasoning", "health/entropy_action", "health/kl_warm",
          "health/tokens_per_turn", "clip_frac", "approx_kl", "value_loss"]


def health(out: Path, runs: list[str]) -> None:
    fig, axes = plt.subplots(3, 4, figsize=(16, 9))
    for i, spec in enumerate(runs):
        label, run_dir = spec.split("=", 1)
        rows = [json.loads(line) for line in Path(run_dir, "metrics.jsonl").read_text().splitlines() if line]
        for ax, key in zip(axes.flat, HEALTH, strict=True):
            pts = [(r["step"], r[key]) for r in rows if key in r]
            if pts:
                ax.plot([s for s, _ in pts], [v for _, v in pts], label=label, lw=1.2, color=f"C{i}")
            ax.set_title(key, fontsize=9)
    axes[0][0].legend(fontsize=7)
    for ax in axes[-1]:
        ax.set_xlabel("RL step")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    kind, target = sys.argv[1], Path(sys.argv[2])
    committed(target) if kind == "committed" else health(target, sys.argv[3:])
