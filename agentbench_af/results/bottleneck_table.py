"""The Action Bottleneck table: rows environment x model, columns `warm start` and one column per method
at the final step, cells `mean ± SE (n)` of the action ratio (signal share / token share); one table per
energy source (`old`, then `entropy`). Generated only from the `bottleneck` field of run records.

Records that carry the reward-reactive headline (`headline` in their snapshots) add a headline table in
front: cells `mean ± SE (n)` of the headline ratio (for one run: its interval), the mean of the runs'
nulls, and how many runs have their interval above their null; then a line naming the cells where the
claim (signal concentrated on the actions) holds in every run and where not. The |c| tables then follow
as labelled secondary tables, each cell with the mean of its null ratios. With no headline in any record
the output is the |c| tables alone, exactly as before the headline existed.

Warm start: the step-0 ratio of every record of the row, over methods and seeds; records of one seed whose
warm-start numbers are identical (the same step-0 batch, measured once per method) count once. Final
step: per method, over its seeds. SE is the sample standard deviation / sqrt(n) (blank for n = 1), as in
the success table. Records without a `bottleneck` field (older records) and failed runs are skipped;
undefined ratios (e.g. no group with reward variance) are not averaged and are listed in the notes.
Left out: token shares (they are in each record) and tests across runs.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from agentbench_af.results.table import cell_stats
from agentbench_af.results.table_files import write_table_files
from agentbench_af.results.table_text import method_sort_key, ratio_cell

WARM = "warm start"
SOURCE_ORDER = ["old", "entropy", "ref"]
FORMATS = ("md", "csv")


@dataclass(frozen=True)
class BottleneckTable:
    stats: pd.DataFrame  # long form: source, env, model, model_params, column, mean, se, n, undefined, reasons
    grid: pd.DataFrame  # display strings; columns: source, env, model, warm start, one per method
    notes: list[str]
    headline_stats: pd.DataFrame | None = None  # long form: env, model, column, mean, se, n, null, above, with_ci
    headline_grid: pd.DataFrame | None = None  # display strings; columns: env, model, warm start, one per method


def ratio_frame(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (completed record with a bottleneck field, column, source): the ratio or its reason.

    `column` is WARM or the record's method; `key` identifies a warm-start measurement (see module doc)."""
    rows = []
    ok = df[(df["status"] == "completed") & df["bottleneck"].notna()]
    for r in ok.itertuples():
        for when, column in (("warm_start", WARM), ("final", r.method)):
            snap = r.bottleneck.get(when) if isinstance(r.bottleneck, dict) else None
            if not snap:
                continue
            key = json.dumps([r.seed, snap], sort_keys=True) if when == "warm_start" else r.path
            for source, s in snap.get("sources", {}).items():
                rows.append({"env": r.env, "model": r.model, "model_params": r.model_params, "column": column,
                             "source": source, "seed": r.seed, "config_hash": r.config_hash, "key": key,
                             "ratio": s.get("ratio"), "null_ratio": s.get("null_ratio"), "reason": s.get("reason")})
    columns = ["env", "model", "model_params", "column", "source", "seed", "config_hash", "key", "ratio",
               "null_ratio", "reason"]
    return pd.DataFrame(rows, columns=columns)


def headline_frame(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (completed record, column) whose snapshot has a headline: ratio, null, interval, reason."""
    rows = []
    ok = df[(df["status"] == "completed") & df["bottleneck"].notna()]
    for r in ok.itertuples():
        for when, column in (("warm_start", WARM), ("final", r.method)):
            snap = r.bottleneck.get(when) if isinstance(r.bottleneck, dict) else None
            h = (snap or {}).get("headline")
            if not h:
                continue
            key = json.dumps([r.seed, snap], sort_keys=True) if when == "warm_start" else r.path
            rows.append({"env": r.env, "model": r.model, "model_params": r.model_params, "column": column,
                         "key": key, "ratio": h.get("ratio"), "null": h.get("null"), "ci_low": h.get("ci_low"),
                         "ci_high": h.get("ci_high"), "confidence": h.get("confidence"), "reason": h.get("reason")})
    columns = ["env", "model", "model_params", "column", "key", "ratio", "null", "ci_low", "ci_high", "confidence",
               "reason"]
    return pd.DataFrame(rows, columns=columns)


def _source_key(source: str) -> tuple[int, str]:
    return (SOURCE_ORDER.index(source) if source in SOURCE_ORDER else len(SOURCE_ORDER), source)


def _column_key(column: str) -> tuple[int, tuple[int, str, str]]:
    return (0, (0, "", "")) if column == WARM else (1, method_sort_key(column))


def _sorted_stats(stats: pd.DataFrame) -> pd.DataFrame:
    """Rows by source (old, entropy, ref), environment, model size, model, then warm start and methods."""
    keys = {"source": _source_key, "column": _column_key}
    order = sorted(range(len(stats)), key=lambda i: tuple(
        keys.get(c, lambda v: v)(stats[c].iloc[i]) for c in ("source", "env", "model_params", "model", "column")))
    return stats.iloc[order].reset_index(drop=True)


def _headline_cell(r) -> str:
    if r.n == 0:
        return "–"
    if r.n == 1 and not math.isnan(r.ci_low):
        head = f"{r.mean:.2f} [{r.ci_low:.2f}, {r.ci_high:.2f}] (1)"
    else:
        head = ratio_cell(r.mean, r.se, r.n)
    null = "" if math.isnan(r.null) else f"; null {r.null:.2f}"
    return f"{head}{null}; above null {r.above}/{r.with_ci}"


def _build_headline(df: pd.DataFrame, methods: list[str]) -> tuple[pd.DataFrame, pd.DataFrame, list[str]] | None:
    frame = headline_frame(df)
    if frame.empty:
        return None
    frame = frame.drop_duplicates(["env", "model", "column", "key"])
    rows, notes = [], []
    for (env, model, column), cell in frame.groupby(["env", "model", "column"]):
        defined = cell[cell["ratio"].notna()]
        mean, se, n = cell_stats(defined["ratio"].astype(float))
        with_ci = defined[defined["ci_low"].notna() & defined["null"].notna()]
        rows.append({"env": env, "model": model, "model_params": int(cell["model_params"].max()), "column": column,
                     "mean": mean, "se": se, "n": n,
                     "null": float(defined["null"].dropna().astype(float).mean()) if n else math.nan,
                     "ci_low": float(defined["ci_low"].iloc[0]) if n == 1 and len(with_ci) else math.nan,
                     "ci_high": float(defined["ci_high"].iloc[0]) if n == 1 and len(with_ci) else math.nan,
                     "above": int((with_ci["ci_low"].astype(float) > with_ci["null"].astype(float)).sum()),
                     "with_ci": len(with_ci), "runs": len(cell)})
        undefined = cell[cell["ratio"].isna()]
        if len(undefined):
            notes.append(f"headline {env} {model} {column}: {len(undefined)} of {len(cell)} without a ratio "
                         f"({'; '.join(sorted({str(x) for x in undefined['reason']}))})")
    stats = pd.DataFrame(rows)
    order = sorted(range(len(stats)), key=lambda i: (stats["env"].iloc[i], stats["model_params"].iloc[i],
                                                    stats["model"].iloc[i], _column_key(stats["column"].iloc[i])))
    stats = stats.iloc[order].reset_index(drop=True)
    grid_rows = []
    for (env, model), part in stats.groupby(["env", "model"], sort=False):
        cells = {r.column: _headline_cell(r) for r in part.itertuples()}
        grid_rows.append({"env": env, "model": model, **{c: cells.get(c, "") for c in [WARM, *methods]}})
    return stats, pd.DataFrame(grid_rows, columns=["env", "model", WARM, *methods]), notes


def build_bottleneck_table(df: pd.DataFrame) -> BottleneckTable | None:
    """The table from a `records_frame`; None when no completed record has a bottleneck field."""
    ratios = ratio_frame(df)
    if ratios.empty:
        return None
    ratios = ratios.drop_duplicates(["source", "env", "model", "column", "key"])
    rows = []
    for (source, env, model, column), cell in ratios.groupby(["source", "env", "model", "column"]):
        mean, se, n = cell_stats(cell["ratio"].dropna().astype(float))
        undefined = cell[cell["ratio"].isna()]
        nulls = cell.loc[cell["ratio"].notna(), "null_ratio"].dropna().astype(float)
        rows.append({"source": source, "env": env, "model": model, "model_params": int(cell["model_params"].max()),
                     "column": column, "mean": mean, "se": se, "n": n, "undefined": len(undefined),
                     "reasons": "; ".join(sorted({str(x) for x in undefined["reason"]})),
                     "null": float(nulls.mean()) if len(nulls) else math.nan})
    stats = _sorted_stats(pd.DataFrame(rows))
    notes = [f"`{r.source}` {r.env} {r.model} {r.column}: {r.undefined} of {r.n + r.undefined} without a ratio "
             f"({r.reasons})" for r in stats.itertuples() if r.undefined]
    for (env, model, column), cell in ratios[ratios["column"] != WARM].groupby(["env", "model", "column"]):
        if cell["config_hash"].nunique() > 1:
            notes.append(f"{env} {model} {column}: records with {cell['config_hash'].nunique()} different configs pooled")
    methods = sorted({c for c in stats["column"] if c != WARM}, key=method_sort_key)
    headline = _build_headline(df, methods)

    def cell_text(r) -> str:  # with a headline, the secondary ratio is shown beside its null
        null = "" if headline is None or r.n == 0 or math.isnan(r.null) else f"; null {r.null:.2f}"
        return ratio_cell(r.mean, r.se, r.n) + null

    grid_rows = []
    for (source, env, model), part in stats.groupby(["source", "env", "model"], sort=False):
        cells = {r.column: cell_text(r) for r in part.itertuples()}
        grid_rows.append({"source": source, "env": env, "model": model, **{c: cells.get(c, "") for c in [WARM, *methods]}})
    grid = pd.DataFrame(grid_rows, columns=["source", "env", "model", WARM, *methods])
    if headline is None:
        return BottleneckTable(stats=stats, grid=grid, notes=notes)
    h_stats, h_grid, h_notes = headline
    return BottleneckTable(stats=stats, grid=grid, notes=h_notes + notes, headline_stats=h_stats, headline_grid=h_grid)


def _shown(grid: pd.DataFrame) -> str:
    shown = grid.set_index(["env", "model"])
    shown.index = [f"{env} {model}" for env, model in shown.index]
    shown.index.name = "environment / model"
    return shown.to_markdown()


def _claim_line(stats: pd.DataFrame) -> str:
    """Cells by how many of their runs' intervals lie above the null; a cell some of whose runs have no
    interval (no group with reward variance) says how many, so "holds" never hides a mostly undefined cell."""
    def name(r, counts: bool) -> str:
        missing = f"; {r.runs - r.with_ci} of {r.runs} runs without an interval" if r.with_ci < r.runs else ""
        shown = f" ({r.above}/{r.with_ci}{missing})" if counts or missing else ""
        return f"{r.env} {r.model} {r.column}{shown}"

    holds = [name(r, False) for r in stats.itertuples() if r.with_ci and r.above == r.with_ci]
    partly = [name(r, True) for r in stats.itertuples() if 0 < r.above < r.with_ci]
    nowhere = [name(r, False) for r in stats.itertuples() if r.with_ci and r.above == 0]
    return (f"The claim (reward-linked signal concentrated on the actions) holds, every run's interval above its "
            f"null, in: {', '.join(holds) or 'no cell'}. In some runs only: {', '.join(partly) or 'no cell'}. "
            f"In no run: {', '.join(nowhere) or 'no cell'}.")


def _headline_markdown(table: BottleneckTable) -> list[str]:
    return ["# Action Bottleneck", "", "## Headline: action/reasoning ratio of reward-linked gradient signal", "",
            "Per run, per group of rollouts and per role (action, reasoning): the policy-gradient signal "
            "||grad sum_i A_i log p(role tokens of rollout i)||^2 and its null (the same with the advantages "
            "shuffled within the group); a role's lift = signal / null summed over groups. Headline ratio = action "
            "lift / reasoning lift; its null = the ratio with shuffled advantages; its interval: bootstrap over "
            "groups. Cells: mean ± standard error of the ratio (number of runs), for one run its interval in "
            "brackets; null: mean of the runs' nulls; above null k/m: runs whose interval lies above their null, "
            "of the m runs with an interval. `warm start`: the first RL step's batch; method columns: one batch "
            "after the last update.", "", _shown(table.headline_grid), "", _claim_line(table.headline_stats), "",
            "## Secondary: |c| ratio (signal share / token share of action tokens)", "",
            "Cells: mean ± standard error (number of runs); null: mean of the runs' null ratios (rewards shuffled "
            "within groups). |c| measures how far a role's energies spread, so this ratio sits near its null "
            "whatever the reward does: read it only against the null, never against 1."]


def to_markdown(table: BottleneckTable) -> str:
    if table.headline_grid is not None:
        parts = _headline_markdown(table)
        for source, part in table.grid.groupby("source", sort=False):
            parts += ["", f"### Energy `{source}` (secondary)", "", _shown(part.drop(columns="source"))]
        if table.notes:
            parts += ["", "Notes:"] + [f"- {n}" for n in table.notes]
        return "\n".join(parts) + "\n"
    parts = ["# Action Bottleneck ratio (signal share / token share of action tokens)", "",
             f"Cells: mean ± standard error (number of runs). `{WARM}`: the first RL step's batch, sampled from the "
             "warm-start policy before any update (one measurement per seed and warm start, over methods); method "
             "columns: one batch sampled with the training recipe after the last update. A ratio above 1: action "
             "tokens carry more of the reward-relevant energy signal than their share of tokens (docs/method.md)."]
    for source, part in table.grid.groupby("source", sort=False):
        parts += ["", f"## Energy `{source}`", ""]
        shown = part.drop(columns="source").set_index(["env", "model"])
        shown.index = [f"{env} {model}" for env, model in shown.index]
        shown.index.name = "environment / model"
        parts.append(shown.to_markdown())
    if table.notes:
        parts += ["", "Notes:"] + [f"- {n}" for n in table.notes]
    return "\n".join(parts) + "\n"


def to_csv(table: BottleneckTable) -> str:
    """The secondary grid; with a headline, the headline grid first (source `headline`)."""
    if table.headline_grid is None:
        return table.grid.to_csv(index=False)
    return pd.concat([table.headline_grid.assign(source="headline")[table.grid.columns], table.grid]).to_csv(index=False)


def write_bottleneck_table(table: BottleneckTable, out_dir: str | Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    """bottleneck.md / bottleneck.csv for the formats among `formats` (others are ignored); no timestamps."""
    return write_table_files(out_dir, {"md": [("bottleneck.md", lambda: to_markdown(table))],
                                       "csv": [("bottleneck.csv", lambda: to_csv(table))]}, formats)
