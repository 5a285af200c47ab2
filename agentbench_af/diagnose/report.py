"""Write the diagnostic as bottleneck.json and a Markdown summary (bottleneck.md), each atomically.

    paths = write_report(stats, out_dir, step=120, meta={"run": "...", "env": "FrozenLake-4x4-v0"})
    step, meta, stats = load_report(paths["json"])
    text = markdown_summary(stats, step=120)            # the Markdown alone

JSON layout: {"step": int | null, "meta": {...}, "stats": BottleneckStats.to_dict()}.
The Markdown has, per energy source: a role table (tokens, token share, signal share, ratio, null ratio,
sum of c, mean energy, Pearson, Spearman), a per-turn table, and a one-line verdict on the action ratio.
Left out: significance tests (the verdict compares the point estimate with 1).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tabulate import tabulate

from agentbench_af.diagnose.stats import BottleneckStats, SourceStats
from agentbench_af.diagnose.tokens import ROLE_KEYS
from agentbench_af.io import atomic_write_json, atomic_write_text

JSON_NAME, MARKDOWN_NAME = "bottleneck.json", "bottleneck.md"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


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
    """One line: is the action ratio above 1 for this source?"""
    ratio, tok = src.bottleneck_ratio, src.overall.roles["action"].token_share
    if ratio is None:
        return f"`{src.source}`: action ratio undefined ({undefined_reason(src)})."
    action = src.overall.roles["action"]
    label = "> 1 (Action Bottleneck present)" if ratio > 1 else "<= 1 (no Action Bottleneck)"
    null = "" if action.null_ratio is None else f"; null ratio (rewards shuffled in groups) {action.null_ratio:.2f}"
    return (f"`{src.source}`: action ratio {ratio:.2f} {label}: action tokens ({_pct(tok)} of tokens) carry "
            f"{_pct(action.signal_share)} of the signal{null}.")


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


def markdown_summary(stats: BottleneckStats, step: int | None = None, title: str = "Action Bottleneck") -> str:
    lines = [f"# {title}" + (f" (step {step})" if step is not None else ""), ""]
    if stats.sources:
        lines += [f"**Verdict:** {verdict(next(iter(stats.sources.values())))}", ""]
    lines += [
        f"{stats.n_trajectories} trajectories in {stats.n_groups} groups, {stats.n_generated_tokens} generated "
        f"tokens; {stats.n_groups_used} groups used, {stats.n_groups_skipped} skipped (zero reward variance).",
        "",
        f"null ratio: the ratio with rewards shuffled within each group ({stats.null_permutations} shuffles), "
        "i.e. what the ratio is when reward does not depend on the tokens; compare the ratio with it.",
        "",
        "c = (e - mean_e) * (R - mean_R) per group; signal share = sum |c| over the role / sum |c|; "
        "ratio = signal share / token share (shares over the used groups). Pearson: per prompt across "
        "rollouts, averaged over n prompts; Spearman: across n prompts (docs/method.md).",
    ]
    for name, src in stats.sources.items():
        lines += ["", f"## Energy source `{name}`", "", verdict(src), "", role_table(src)]
        if src.by_turn:
            lines += ["", f"### By turn (`{name}`)", "", turn_table(src)]
    return "\n".join(lines) + "\n"


def write_report(stats: BottleneckStats, out_dir: str | Path, step: int | None = None,
                 meta: dict[str, Any] | None = None, title: str = "Action Bottleneck") -> dict[str, Path]:
    """Write bottleneck.json and bottleneck.md under out_dir (temp file then os.replace)."""
    out = Path(out_dir)
    payload = {"step": step, "meta": meta or {}, "stats": stats.to_dict()}
    return {
        "json": atomic_write_json(out / JSON_NAME, payload),
        "markdown": atomic_write_text(out / MARKDOWN_NAME, markdown_summary(stats, step, title)),
    }


def load_report(path: str | Path) -> tuple[int | None, dict[str, Any], BottleneckStats]:
    """(step, meta, stats) from a bottleneck.json written by `write_report`."""
    try:
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
        return payload["step"], payload.get("meta", {}), BottleneckStats.from_dict(payload["stats"])
    except (KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a bottleneck.json written by write_report: {exc!r}") from exc
