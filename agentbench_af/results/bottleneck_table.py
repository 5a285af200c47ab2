"""The Action Bottleneck table: rows environment x model, columns `warm start` and one column per method
at the final step, cells `mean ± SE (n)` of the action ratio (signal share / token share); one table per
energy source (`old`, then `entropy`). Generated only from the `bottleneck` field of run records.

Warm start: the step-0 ratio of every record of the row, over methods and seeds; records of one seed whose
warm-start numbers are identical (the same step-0 batch, measured once per method) count once. Final
step: per method, over its seeds. SE is the sample standard deviation / sqrt(n) (blank for n = 1), as in
the success table. Records without a `bottleneck` field (older records) and failed runs are skipped;
undefined ratios (e.g. no group with reward variance) are not averaged and are listed in the notes.
Left out: null ratios and token shares (they are in each record) and significance tests.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from agentbench_af.results.table import cell_stats, method_sort_key
from agentbench_af.results.table_files import write_table_files

WARM = "warm start"
SOURCE_ORDER = ["old", "entropy", "ref"]
FORMATS = ("md", "csv")


@dataclass(frozen=True)
class BottleneckTable:
    stats: pd.DataFrame  # long form: source, env, model, model_params, column, mean, se, n, undefined, reasons
    grid: pd.DataFrame  # display strings; columns: source, env, model, warm start, one per method
    notes: list[str]


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
                             "ratio": s.get("ratio"), "reason": s.get("reason")})
    columns = ["env", "model", "model_params", "column", "source", "seed", "config_hash", "key", "ratio", "reason"]
    return pd.DataFrame(rows, columns=columns)


def _fmt(mean: float, se: float, n: int) -> str:
    if n == 0:
        return "–"
    se_txt = f" ± {se:.2f}" if n > 1 and not math.isnan(se) else ""
    return f"{mean:.2f}{se_txt} ({n})"


def _source_key(source: str) -> tuple[int, str]:
    return (SOURCE_ORDER.index(source) if source in SOURCE_ORDER else len(SOURCE_ORDER), source)


def _column_key(column: str) -> tuple[int, tuple[int, str]]:
    return (0, (0, "")) if column == WARM else (1, method_sort_key(column))


def _sorted_stats(stats: pd.DataFrame) -> pd.DataFrame:
    """Rows by source (old, entropy, ref), environment, model size, model, then warm start and methods."""
    keys = {"source": _source_key, "column": _column_key}
    order = sorted(range(len(stats)), key=lambda i: tuple(
        keys.get(c, lambda v: v)(stats[c].iloc[i]) for c in ("source", "env", "model_params", "model", "column")))
    return stats.iloc[order].reset_index(drop=True)


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
        rows.append({"source": source, "env": env, "model": model, "model_params": int(cell["model_params"].max()),
                     "column": column, "mean": mean, "se": se, "n": n, "undefined": len(undefined),
                     "reasons": "; ".join(sorted({str(x) for x in undefined["reason"]}))})
    stats = _sorted_stats(pd.DataFrame(rows))
    notes = [f"`{r.source}` {r.env} {r.model} {r.column}: {r.undefined} of {r.n + r.undefined} without a ratio "
             f"({r.reasons})" for r in stats.itertuples() if r.undefined]
    for (env, model, column), cell in ratios[ratios["column"] != WARM].groupby(["env", "model", "column"]):
        if cell["config_hash"].nunique() > 1:
            notes.append(f"{env} {model} {column}: records with {cell['config_hash'].nunique()} different configs pooled")
    methods = sorted({c for c in stats["column"] if c != WARM}, key=method_sort_key)
    grid_rows = []
    for (source, env, model), part in stats.groupby(["source", "env", "model"], sort=False):
        cells = {r.column: _fmt(r.mean, r.se, r.n) for r in part.itertuples()}
        grid_rows.append({"source": source, "env": env, "model": model, **{c: cells.get(c, "") for c in [WARM, *methods]}})
    grid = pd.DataFrame(grid_rows, columns=["source", "env", "model", WARM, *methods])
    return BottleneckTable(stats=stats, grid=grid, notes=notes)


def to_markdown(table: BottleneckTable) -> str:
    parts = ["# Action Bottleneck ratio (signal share / token share of action tokens)", "",
             f"Cells: mean ± standard error (number of runs). `{WARM}`: the first RL step's batch, sampled from the "
             "warm-start policy before any update (one measurement per seed and warm start, over methods); method "
             "columns: one batch sampled with the training recipe after the last update. A ratio above 1: action "
             "tokens carry more of the reward-relevant energy signal than their share of tokens (ACTFOCUS.md)."]
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
    return table.grid.to_csv(index=False)


def write_bottleneck_table(table: BottleneckTable, out_dir: str | Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    """bottleneck.md / bottleneck.csv for the formats among `formats` (others are ignored); no timestamps."""
    return write_table_files(out_dir, {"md": [("bottleneck.md", lambda: to_markdown(table))],
                                       "csv": [("bottleneck.csv", lambda: to_csv(table))]}, formats)
