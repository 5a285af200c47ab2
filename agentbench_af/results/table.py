"""The final-step success table: rows model x method, columns environment variants, cells
`mean ± SE (n)` in percent, the best per column marked, a row per model with the warm start's
success (the step-0 evaluation every method starts from), and rows for each reweighting's gain over its
base method. Generated only from run records; Markdown, CSV and LaTeX.

Only seed-replicates are averaged: records in one cell with different config hashes (settings that
differ in anything but the seed) become separate rows labelled with their hash. Failed runs are
listed in the notes, never averaged. SE is the sample standard deviation / sqrt(n) (blank for n = 1).
Left out: significance tests (n is small; the table shows n so readers can judge).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from agentbench_af.credit import method_names
from agentbench_af.results.table_files import write_table_files

PROTOCOL_FIELDS = ["eval_episodes", "eval_temperature", "sft_steps", "rl_steps", "prompts_per_step", "group_size",
                   "max_turns", "context_mode", "catalogue"]


def method_sort_key(method: str) -> tuple[int, str, str]:
    """Rows follow the credit registry's estimator order (built-ins, then plugins), then the weighting;
    a base no loaded module registers (a record from an absent plugin) comes last, by name."""
    order = method_names()
    base, _, weighting = method.partition("+")
    return (order.index(base) if base in order else len(order), base if base not in order else "", weighting)


@dataclass(frozen=True)
class SuccessTable:
    stats: pd.DataFrame  # long form: env, model, method, row, config_hash, mean, se, n, best
    grid: pd.DataFrame  # display strings, index = row label, columns = envs
    protocol: list[str]
    notes: list[str]


def _fmt(mean: float, se: float, n: int) -> str:
    se_txt = f" ± {se * 100:.1f}" if n > 1 and not math.isnan(se) else ""
    return f"{mean * 100:.1f}{se_txt} ({n})"


def cell_stats(values: pd.Series) -> tuple[float, float, int]:
    n = int(values.count())
    mean = float(values.mean()) if n else math.nan
    se = float(values.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    return mean, se, n


def build_table(df: pd.DataFrame) -> SuccessTable:
    """Aggregate a `records_frame` into the success table."""
    if df.empty:
        raise ValueError("no run records found")
    ok = df[(df["status"] == "completed") & df["final_success"].notna()]
    notes = [f"failed run excluded: {r.env} {r.model} {r.method} seed {r.seed}: {r.error or 'no error recorded'}"
             for r in df[df["status"] != "completed"].itertuples()]
    notes += [f"run without a final success excluded: {r.env} {r.model} {r.method} seed {r.seed}"
              for r in df[(df["status"] == "completed") & df["final_success"].isna()].itertuples()]
    if ok.empty:
        raise ValueError("no completed run records to tabulate")
    rows = []
    for (env, model, method), cell in ok.groupby(["env", "model", "method"], sort=True):
        hashes = sorted(cell["config_hash"].unique())
        if len(hashes) > 1:
            notes.append(f"{env} {model} {method}: records with {len(hashes)} different configs are kept apart")
        for h in hashes:
            part = cell[cell["config_hash"] == h]
            dup = part["seed"].duplicated(keep=False)
            if dup.any():
                seeds = sorted({int(s) for s in part["seed"][dup]})
                raise ValueError(f"{env} {model} {method}: seed(s) {seeds} appear twice with config {h}; remove the "
                                 f"duplicate records: {', '.join(sorted(part['path'][dup]))}")
            mean, se, n = cell_stats(part["final_success"])
            label = f"{model} {method}" + (f" [config {h}]" if len(hashes) > 1 else "")
            rows.append({"env": env, "model": model, "model_params": int(part["model_params"].max()),
                         "method": method, "row": label, "config_hash": h, "mean": mean, "se": se, "n": n,
                         "seeds": ",".join(str(s) for s in sorted(part["seed"]))})
    stats = pd.DataFrame(rows)
    stats["best"] = stats["mean"] == stats.groupby("env")["mean"].transform("max")
    stats = stats.sort_values(["model_params", "model", "method"], key=lambda s: s.map(method_sort_key) if s.name == "method" else s)
    envs = sorted(stats["env"].unique())
    gains = _gain_rows(stats)
    warm, warm_notes = _warm_start_rows(ok)
    notes += warm_notes
    order: list[str] = []
    for model in dict.fromkeys(stats["model"]):  # each model's warm start, its methods, then its gain rows
        order += sorted({label for label, m, _, _ in warm if m == model})
        order += list(dict.fromkeys(stats.loc[stats["model"] == model, "row"]))
        order += sorted({label for label, m, _, _ in gains if m == model}, key=lambda x: method_sort_key(x.split()[-3]))
    grid = pd.DataFrame("", index=order, columns=envs)
    for r in stats.itertuples():
        text = _fmt(r.mean, r.se, r.n)
        grid.loc[r.row, r.env] = f"**{text}**" if r.best else text
    for label, _, env, text in gains + warm:
        grid.loc[label, env] = text
    grid.index.name = "model / method"
    return SuccessTable(stats=stats.reset_index(drop=True), grid=grid, protocol=_protocol_lines(ok), notes=notes)


def _signed(x: float) -> str:
    x = round(x, 10) + 0.0  # no "-0.0" from rounding noise
    return f"{x:+.1f}"


def _gain_rows(stats: pd.DataFrame) -> list[tuple[str, str, str, str]]:
    """(row label, model, env, text) for each `base+weighting` method vs `base`, same model and env.

    Only unsplit cells (one config) are compared; SE of the difference is sqrt(SE_a^2 + SE_b^2)."""
    out = []
    single = stats.groupby(["env", "model", "method"]).filter(lambda g: len(g) == 1)
    index = {(r.env, r.model, r.method): r for r in single.itertuples()}
    for (env, model, method), r in sorted(index.items()):
        base = method.split("+")[0]
        if "+" not in method or (env, model, base) not in index:
            continue
        b = index[(env, model, base)]
        diff = r.mean - b.mean
        se = math.sqrt(r.se**2 + b.se**2) if r.n > 1 and b.n > 1 else math.nan
        se_txt = f" ± {se * 100:.1f}" if not math.isnan(se) else ""
        out.append((f"{model} gain {method} vs {base}", model, env, f"{_signed(diff * 100)}{se_txt} ({r.n} vs {b.n})"))
    return out


def _warm_start_rows(ok: pd.DataFrame) -> tuple[list[tuple[str, str, str, str]], list[str]]:
    """(row label, model, env, text) of the warm-start success (the step-0 evaluation) per env and model.

    One value per seed (the methods of a seed share it); omitted, with a note, where runs of one seed
    started from different warm starts (their step-0 successes differ)."""
    out, notes = [], []
    for (env, model), part in ok.dropna(subset=["warm_start_success"]).groupby(["env", "model"], sort=True):
        per_seed = part.groupby("seed")["warm_start_success"]
        if (per_seed.nunique() > 1).any():
            notes.append(f"{env} {model}: no warm-start row (runs of one seed start from different warm starts)")
            continue
        mean, se, n = cell_stats(per_seed.first())
        out.append((f"{model} warm start", model, env, _fmt(mean, se, n)))
    return out, notes


def _protocol_lines(ok: pd.DataFrame) -> list[str]:
    lines = []
    for env, part in ok.groupby("env", sort=True):
        fields = []
        for f in PROTOCOL_FIELDS:
            values = sorted({str(v) for v in part[f].dropna()})
            if values and values != ["None"]:
                fields.append(f"{f.replace('_', ' ')} {'/'.join(values)}")
        seeds = sorted({int(s) for s in part["seed"]})
        lines.append(f"{env}: " + ", ".join(fields) + f", seeds {seeds}")
    return lines


def to_markdown(table: SuccessTable, title: str = "Final-step success (%)") -> str:
    parts = [f"# {title}", "", "Protocol (final-step success = success rate on the fixed evaluation seeds after the last update):"]
    parts += [f"- {line}" for line in table.protocol]
    parts += ["", "Cells: mean ± standard error over seeds (number of seeds); best per column in bold. "
              "Warm start: the success before any RL update (the step-0 evaluation), over the same seeds. "
              "Gain rows: difference in points ± combined SE (seeds of each).", ""]
    parts.append(table.grid.to_markdown())
    if table.notes:
        parts += ["", "Notes:"] + [f"- {n}" for n in table.notes]
    return "\n".join(parts) + "\n"


def to_latex(table: SuccessTable) -> str:
    grid = table.grid.map(lambda s: s.replace("**", "\\textbf{", 1).replace("**", "}", 1) if s.startswith("**") else s)
    grid = grid.map(lambda s: s.replace("±", "$\\pm$"))
    grid.columns = [c.replace("_", "\\_") for c in grid.columns]
    grid.index = [i.replace("_", "\\_") for i in grid.index]
    return grid.to_latex(escape=False, column_format="l" + "r" * len(grid.columns))


def to_csv(table: SuccessTable) -> str:
    return table.grid.replace(r"\*\*(.*)\*\*", r"\1*", regex=True).to_csv()


FORMATS = ("md", "csv", "tex")


def write_table(table: SuccessTable, out_dir: str | Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    """Write table.md / table.csv (+ stats.csv, the long form) / table.tex; no timestamps (reproducible)."""
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise ValueError(f"unknown table format(s) {unknown}; choose from {list(FORMATS)}")
    return write_table_files(out_dir, {
        "md": [("table.md", lambda: to_markdown(table))],
        "csv": [("table.csv", lambda: to_csv(table)), ("stats.csv", lambda: table.stats.to_csv(index=False))],
        "tex": [("table.tex", lambda: to_latex(table))],
    }, formats)
