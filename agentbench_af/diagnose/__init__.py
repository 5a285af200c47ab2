"""The Action Bottleneck diagnostic (docs/diagnose.md): where the reward-relevant token signal sits.

    from agentbench_af.diagnose import (compute_headline, compute_bottleneck, token_contributions, write_report,
                                        plot_shares, plot_energy, plot_ratio_over_steps, write_html)
    h = compute_headline(batch, policy.lm)                  # the headline (headline.py): ratio, null, interval
    stats = compute_bottleneck(batch)                       # secondary |c| numbers (stats.py); .to_dict() for JSON
    stats.sources["old"].bottleneck_ratio                   # signal share / token share of action tokens
    write_report(stats, out_dir, step=step, headline=h)     # bottleneck.json + bottleneck.md (report.py)
    plot_shares(stats, out_dir); plot_energy(batch, out_dir)           # PNG + SVG (plots.py)
    plot_ratio_over_steps([(step, stats), ...], out_dir)
    abs_c = token_contributions(batch, "old").abs()         # (B, T) |c| per token (tokens.py)
    write_html(out_dir / "tokens.html", batch, abs_c, token_texts)     # token_texts[b][t] (html.py)

All of the above reads a `RolloutBatch` (e.g. `results.rollout_store.load_rollouts`); only the headline's
gradient part needs the policy (`gradient_signal.py`).
Modules imported on their own: `sample` (a policy -> grouped rollouts -> a scored batch), `pipeline` (batches
-> every file above), `inputs` (what a run directory offers), `snapshot` (the ratio in a run record); the
`agentbench-af diagnose` command drives them. The plot functions are imported on first use, so importing
this package does not load matplotlib or set its backend.
"""

from agentbench_af.diagnose.headline import HeadlineStats, compute_headline
from agentbench_af.diagnose.html import render_html, write_html
from agentbench_af.diagnose.report import load_headline, load_report, markdown_summary, verdict, write_report
from agentbench_af.diagnose.stats import (
    BottleneckStats,
    RoleStats,
    SourceStats,
    SplitStats,
    compute_bottleneck,
    source_stats,
)
from agentbench_af.diagnose.tokens import ROLE_KEYS, available_sources, token_contributions

_PLOTS = ("plot_shares", "plot_energy", "plot_ratio_over_steps")


def __getattr__(name: str):
    if name in _PLOTS:
        from agentbench_af.diagnose import plots

        return getattr(plots, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ROLE_KEYS",
    "BottleneckStats",
    "HeadlineStats",
    "RoleStats",
    "SourceStats",
    "SplitStats",
    "available_sources",
    "compute_bottleneck",
    "compute_headline",
    "load_headline",
    "load_report",
    "markdown_summary",
    "plot_energy",
    "plot_ratio_over_steps",
    "plot_shares",
    "render_html",
    "source_stats",
    "token_contributions",
    "verdict",
    "write_html",
    "write_report",
]
