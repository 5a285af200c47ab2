"""Write the diagnostic as bottleneck.json and a Markdown summary (bottleneck.md), each atomically.

    paths = write_report(stats, out_dir, step=120, meta={"run": "...", "env": "FrozenLake-4x4-v0"},
                         headline=compute_headline(batch, lm))
    step, meta, stats = load_report(paths["json"]); headline = load_headline(paths["json"])
    text = markdown_summary(stats, step=120, headline=headline)     # the Markdown alone

JSON layout: {"step": int | null, "meta": {...}, "stats": BottleneckStats.to_dict(),
"headline": HeadlineStats.to_dict() | null}.
The Markdown opens with the headline (`headline.py`): its verdict (interval against the null) and a
role table (gradient signal, its null, signal above the null, lift, shares, Pearson with the energy sum
and mean). Then, labelled secondary, per energy source: the |c| role table (tokens, token share, signal
share, ratio, null ratio, sum of c, mean energy, Pearson, Spearman), a per-turn table, and a one-line
summary of the |c| action ratio against its null.
Left out: significance tests of the secondary ratio.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tabulate import tabulate

from agentbench_af.diagnose.headline import HeadlineStats
from agentbench_af.diagnose.stats import BottleneckStats, SourceStats
from agentbench_af.diagnose.tokens import ROLE_KEYS
from agentbench_af.io import atomic_write_json, atomic_write_text

JSON_NAME, MARKDOWN_NAME = "bottleneck.json", "bottleneck.md"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _sig(x: float | None) -> str:
    return "–" if x is None else f"{x:.4g}"


def _corr(x: float | None, n: int) -> str:
    return f"{_num(x)} (n={n})"


def undefined_reason(src: SourceStats) -> str | None:
    """Why the action ratio of `src` is undefined (None when it is defined)."""
    if src.bottleneck_ratio is not None:
        return None
    if src.overall.n_tokens == 0:
        return "no generated tokens in a group with reward variance"
    if src.overall.roles["action"].n_tokens == 0:
        return "no action tokens"
    return "no energy signal: every c is 0"


def verdict(src: SourceStats) -> str:
    """One line on the secondary |c| action ratio of this source, beside its null (never against 1: the
    ratio sits near its null whatever the reward does, so only a gap to the null says anything)."""
    ratio, tok = src.bottleneck_ratio, src.overall.roles["action"].token_share
    if ratio is None:
        return f"`{src.source}`: action ratio undefined ({undefined_reason(src)})."
    action = src.overall.roles["action"]
    null = "no null" if action.null_ratio is None else f"null ratio {action.null_ratio:.2f} (rewards shuffled in groups)"
    return (f"`{src.source}`: action ratio {ratio:.2f}, {null}: action tokens "
            f"({_pct(tok)} of tokens) carry {_pct(action.signal_share)} of sum |c|.")


def _table(rows: list[list], head: list[str]) -> str:
    align = ("left",) + ("right",) * (len(head) - 1)
    return tabulate(rows, head, tablefmt="github", disable_numparse=True, colalign=align)


def role_table(src: SourceStats) -> str:
    rows = []
    for key in ROLE_KEYS:
        r = src.overall.roles[key]
        rows.append([key, r.n_tokens, _pct(r.token_share), _pct(r.signal_share), _num(r.ratio, 2),
                     _num(r.null_ratio, 2), _num(r.signed_signal), _num(r.mean_energy), _corr(r.pearson, r.pearson_prompts),
                     _corr(r.spearman, r.spearman_prompts)])
    head = ["role", "tokens", "token share", "signal share", "ratio", "null ratio", "sum c", "mean energy",
            "Pearson(R, energy)", "Spearman(var R, energy)"]
    return _table(rows, head)


def turn_table(src: SourceStats) -> str:
    rows = []
    for turn, s in src.by_turn.items():
        a, r = s.roles["action"], s.roles["reasoning"]
        rows.append([turn, s.n_tokens, _pct(s.token_share_of_total), _pct(s.signal_share_of_total),
                     _pct(a.token_share), _pct(a.signal_share), _num(a.ratio, 2), _num(a.null_ratio, 2),
                     _num(r.ratio, 2),
                     _num(s.roles["format"].ratio, 2), _corr(a.pearson, a.pearson_prompts),
                     _corr(r.pearson, r.pearson_prompts)])
    head = ["turn", "tokens", "of all tokens", "of all signal", "action token share", "action signal share",
            "action ratio", "action null ratio", "reasoning ratio", "format ratio", "action Pearson", "reasoning Pearson"]
    return _table(rows, head)


def headline_table(h: HeadlineStats) -> str:
    rows = []
    for key, r in h.roles.items():
        rows.append([key, r.n_tokens, _sig(r.signal), _sig(r.null_signal), _sig(r.above_null),
                     _num(r.lift, 2), _pct(r.share), _pct(r.null_share), _corr(r.pearson_sum, r.pearson_sum_groups),
                     _corr(r.pearson_mean, r.pearson_mean_groups)])
    head = ["role", "tokens", "gradient signal", "null", "above null", "lift", "share", "null share",
            "Pearson(R, energy sum)", "Pearson(R, energy mean)"]
    return _table(rows, head)


def headline_section(h: HeadlineStats) -> list[str]:
    lines = [f"**Headline:** {h.verdict()}", ""]
    interval = "–" if h.ci_low is None else f"[{h.ci_low:.2f}, {h.ci_high:.2f}]"
    lines += [
        f"Headline ratio {_num(h.ratio, 2)}, null {_num(h.null, 2)}, {100 * h.confidence:.0f}% interval {interval} "
        f"(bootstrap over {h.n_groups_measured} of {h.n_groups_used} groups with reward variance, {h.resamples} "
        f"resamples; null over {h.shuffles} shuffles; format tokens counted as {h.format_role}).",
        "",
        "Per group and role: gradient signal = ||grad sum_i A_i log p(role tokens of rollout i)||^2 with the "
        "group-normalised advantages A; null = its mean with A shuffled within the group; lift = signal / null "
        "(summed over groups). Headline ratio = action lift / reasoning lift; its null = the same ratio with "
        "shuffled advantages. The signal concentrates on the actions only where the interval lies above the "
        "null. Pearson: per group across rollouts, between R and the role's energy (-log p), averaged over groups.",
    ]
    if h.roles:
        lines += ["", headline_table(h)]
    return lines


def markdown_summary(stats: BottleneckStats, step: int | None = None, title: str = "Action Bottleneck",
                     headline: HeadlineStats | None = None, gradients: str | None = None) -> str:
    """The report's text; `gradients`: the parameters the headline's gradients were taken over."""
    lines = [f"# {title}" + (f" (step {step})" if step is not None else ""), ""]
    if headline is not None:
        lines += [*headline_section(headline), ""]
        if gradients:
            lines += [f"Headline gradients over: {gradients}.", ""]
    if stats.sources:
        lines += [f"**Secondary (|c| ratio):** {verdict(next(iter(stats.sources.values())))}", ""]
    lines += [
        f"{stats.n_trajectories} trajectories in {stats.n_groups} groups, {stats.n_generated_tokens} generated "
        f"tokens; {stats.n_groups_used} groups used, {stats.n_groups_skipped} skipped (zero reward variance).",
        "",
        "Secondary numbers: c = (e - mean_e) * (R - mean_R) per group; signal share = sum |c| over the role / "
        "sum |c|; ratio = signal share / token share (shares over the used groups). |c| measures how far a "
        "role's energies spread around the group mean, so the ratio sits near its null ratio (rewards shuffled "
        f"within each group, {stats.null_permutations} shuffles) whatever the reward does; read it only against "
        "that null. Pearson: per prompt across rollouts, averaged over n prompts; Spearman: across n prompts.",
    ]
    for name, src in stats.sources.items():
        lines += ["", f"## Energy source `{name}` (secondary)", "", verdict(src), "", role_table(src)]
        if src.by_turn:
            lines += ["", f"### By turn (`{name}`)", "", turn_table(src)]
    return "\n".join(lines) + "\n"


def write_report(stats: BottleneckStats, out_dir: str | Path, step: int | None = None,
                 meta: dict[str, Any] | None = None, title: str = "Action Bottleneck",
                 headline: HeadlineStats | None = None) -> dict[str, Path]:
    """Write bottleneck.json and bottleneck.md under out_dir (temp file then os.replace)."""
    out = Path(out_dir)
    payload = {"step": step, "meta": meta or {}, "stats": stats.to_dict(),
               "headline": headline.to_dict() if headline is not None else None}
    return {
        "json": atomic_write_json(out / JSON_NAME, payload),
        "markdown": atomic_write_text(out / MARKDOWN_NAME, markdown_summary(
            stats, step, title, headline, (meta or {}).get("headline_gradients"))),
    }


def load_report(path: str | Path) -> tuple[int | None, dict[str, Any], BottleneckStats]:
    """(step, meta, stats) from a bottleneck.json written by `write_report`."""
    try:
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
        return payload["step"], payload.get("meta", {}), BottleneckStats.from_dict(payload["stats"])
    except (KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a bottleneck.json written by write_report: {exc!r}") from exc


def load_headline(path: str | Path) -> HeadlineStats | None:
    """The headline of a bottleneck.json written by `write_report` (None when it has none)."""
    try:
        d = json.loads(Path(path).read_text(encoding="utf-8")).get("headline")
        return HeadlineStats.from_dict(d) if d is not None else None
    except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a bottleneck.json written by write_report: {exc!r}") from exc
