"""The Action Bottleneck diagnostic (ACTFOCUS.md): where the reward-relevant token signal sits.

    from agentbench_af.diagnose import (compute_bottleneck, token_contributions, write_report,
                                        plot_shares, plot_energy, plot_ratio_over_steps, write_html)
    stats = compute_bottleneck(batch)                       # BottleneckStats (stats.py); .to_dict() for JSON
    write_report(stats, out_dir, step=step)                 # bottleneck.json + bottleneck.md (report.py)
    plot_shares(stats, out_dir); plot_energy(batch, out_dir)           # PNG + SVG (plots.py)
    plot_ratio_over_steps([(step, stats), ...], out_dir)
    abs_c = token_contributions(batch, "old").abs()         # (B, T) |c| per token (tokens.py)
    write_html(out_dir / "tokens.html", batch, abs_c, token_texts)     # token_texts[b][t] (html.py)

All of it reads a saved `RolloutBatch`; none of it samples rollouts or needs a model.
"""

from agentbench_af.diagnose.stats import (
    BottleneckStats,
    RoleStats,
    SourceStats,
    SplitStats,
    compute_bottleneck,
    source_stats,
)
from agentbench_af.diagnose.tokens import ROLE_KEYS, available_sources, token_contributions

__all__ = [
    "ROLE_KEYS",
    "BottleneckStats",
    "RoleStats",
    "SourceStats",
    "SplitStats",
    "available_sources",
    "compute_bottleneck",
    "source_stats",
    "token_contributions",
]
