"""One table of several `agentbench-af diagnose` outputs: a row per output folder (its bottleneck.json), so a
model's stages (zero-shot, warm start, after RL) and environments read side by side.

    rows = [diagnostic_row(folder, label) for folder, label in ...]
    write_diagnose_table(rows, out_dir)   # diagnose-table.md and diagnose-table.csv

Per row: the headline (action/reasoning ratio of reward-explained gradient signal, its bootstrap interval
and its shuffled-advantage null, `diagnose.headline`), where the interval lies against the null, the groups
it measured, and how the trajectories are composed: each role's share of the generated tokens and its mean
entropy per token (the `entropy` energy source: the sampling policy's entropy, in nats), over the groups
with reward variance. Values are copied from the folders' bottleneck.json; nothing is recomputed.
Left out: the secondary |c| ratios and the per-turn tables (each folder's bottleneck.md has them).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from agentbench_af.diagnose.headline import interval_position
from agentbench_af.diagnose.report import JSON_NAME, load_headline, load_report
from agentbench_af.io import atomic_write_text

ROLES = ("action", "reasoning", "format")
MARKDOWN, CSV = "diagnose-table.md", "diagnose-table.csv"


@dataclass(frozen=True)
class DiagnosticRow:
    label: str  # the stage or name given for the folder (default: the folder's name)
    env: str
    model: str
    trajectories: int
    groups: int
    groups_used: int  # groups whose rewards vary
    generated_tokens: int
    ratio: float | None  # the headline; None where undefined (see `where`)
    ci_low: float | None
    ci_high: float | None
    null: float | None
    groups_measured: int  # groups with a gradient measurement behind the headline
    where: str  # "above the null" / "below the null" / "contains the null" / why there is no headline
    token_share: dict[str, float | None]  # role -> share of the generated tokens (used groups)
    entropy: dict[str, float | None]  # role -> mean entropy per token, nats (used groups)


def _where(ratio, lo, hi, null, reason) -> str:
    if ratio is None:
        return f"undefined: {reason}" if reason else "undefined"
    position = interval_position(null, lo, hi)
    return f"{position} the null" if position else "no interval (fewer than 2 groups)"


def diagnostic_row(folder: Path, label: str | None = None) -> DiagnosticRow:
    """The row of one `diagnose` output folder; ValueError if it holds no readable bottleneck.json."""
    path = Path(folder) / JSON_NAME
    if not path.is_file():
        raise ValueError(f"{folder} has no {JSON_NAME}: is it an `agentbench-af diagnose` output folder?")
    _, meta, stats = load_report(path)
    head = load_headline(path)
    sources = stats.sources
    composition = sources.get("entropy") or sources.get("old")
    roles = composition.overall.roles if composition is not None else {}
    entropy = sources["entropy"].overall.roles if "entropy" in sources else {}
    ratio = head.ratio if head else None
    return DiagnosticRow(
        label=label or Path(folder).name, env=str(meta.get("env", "")), model=str(meta.get("model", "")),
        trajectories=stats.n_trajectories, groups=stats.n_groups, groups_used=stats.n_groups_used,
        generated_tokens=stats.n_generated_tokens, ratio=ratio, ci_low=head.ci_low if head else None,
        ci_high=head.ci_high if head else None, null=head.null if head else None,
        groups_measured=head.n_groups_measured if head else 0,
        where=_where(ratio, head.ci_low if head else None, head.ci_high if head else None,
                     head.null if head else None, head.reason if head else "no headline in this report"),
        token_share={r: roles[r].token_share if r in roles else None for r in ROLES},
        entropy={r: entropy[r].mean_energy if r in entropy else None for r in ROLES})


def _num(x: float | None, digits: int = 2) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def to_frame(rows: list[DiagnosticRow]) -> pd.DataFrame:
    """Long-form numbers, one row per folder (the CSV)."""
    flat = []
    for row in rows:
        d = asdict(row)
        shares, entropies = d.pop("token_share"), d.pop("entropy")
        flat.append({**d, **{f"{r}_token_share": shares[r] for r in ROLES},
                     **{f"{r}_entropy": entropies[r] for r in ROLES}})
    return pd.DataFrame(flat)


def to_markdown(rows: list[DiagnosticRow]) -> str:
    head = ("| stage | env | model | headline ratio [95% interval] | null | interval | groups measured / with "
            "reward variance / all | action tokens | entropy action / reasoning (nats) | rollouts | tokens |\n"
            "|:--|:--|:--|:--|--:|:--|:--|--:|:--|--:|--:|\n")
    lines = []
    for r in rows:
        interval = f" [{_num(r.ci_low)}, {_num(r.ci_high)}]" if r.ci_low is not None and r.ci_high is not None else ""
        lines.append(f"| {r.label} | {r.env} | {r.model} | {_num(r.ratio)}{interval} | {_num(r.null)} | {r.where} | "
                     f"{r.groups_measured} / {r.groups_used} / {r.groups} | {_pct(r.token_share['action'])} | "
                     f"{_num(r.entropy['action'], 3)} / {_num(r.entropy['reasoning'], 3)} | {r.trajectories} | "
                     f"{r.generated_tokens} |")
    note = ("\nHeadline: the action tokens' lift of reward-explained gradient signal over the reasoning tokens' "
            "(1: no concentration), with its bootstrap interval over groups and its null (advantages shuffled "
            "within groups). The signal concentrates on the actions only where the interval lies above the null. "
            "Token shares and entropies are over the groups with reward variance; format tokens count as "
            "reasoning where the diagnostic said so. Generated by `agentbench-af diagnose-table`.\n")
    return "# Action Bottleneck diagnostics\n\n" + head + "\n".join(lines) + "\n" + note


def write_diagnose_table(rows: list[DiagnosticRow], out_dir: Path) -> list[Path]:
    """diagnose-table.md and diagnose-table.csv in `out_dir`, each written atomically."""
    out_dir = Path(out_dir)
    return [atomic_write_text(out_dir / MARKDOWN, to_markdown(rows)),
            atomic_write_text(out_dir / CSV, to_frame(rows).to_csv(index=False))]
