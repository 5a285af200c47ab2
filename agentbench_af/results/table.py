"""The final-step success table: rows model x method, columns environment variants, cells
`mean ± SE (n)` in percent, the best per column marked, a row per model with the warm start's
success (the step-0 evaluation every method starts from), and rows for each reweighting's gain over its
base method. Generated only from run records; Markdown, CSV and LaTeX.

Only seed-replicates are averaged: records in one cell with different config hashes (settings that
differ in anything but the seed) become separate rows labelled with their hash. Failed runs are
listed in the notes, never averaged. SE is the sample standard deviation / sqrt(n) (blank for n = 1).
Gain rows are paired: per seed (the methods of a seed share one warm start) the method's success minus
its base's, then the mean, its SE (sd of the differences / sqrt(n)), wins and losses (ties: |d| < 1e-9)
and the two-sided sign test's p (`results.paired`); a gain row whose two methods ran at different
learning rates (`rl.lr`) gets a note, in table.md and under gains.md's table (`results.rate_notes`).
`gains.csv` holds them in long form with a `verdict` per comparison (the confirmatory presets' rule:
"better" or "worse" where p < 0.05 in that direction, else "not distinguished"), and `gains.md` shows them on one screen (`results.gains_table`).
Records made with `eval.also_greedy` add a `<env> greedy` column of greedy success.
Left out: corrections for multiple comparisons (the table shows every cell; readers weigh them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from agentbench_af.results import gains_table
from agentbench_af.results.paired import paired_gain
from agentbench_af.results.rate_notes import rate_notes
from agentbench_af.results.table_files import write_table_files
from agentbench_af.results.table_text import gain_text, method_sort_key, percent_cell

PROTOCOL_FIELDS = ["eval_episodes", "eval_temperature", "sft_steps", "rl_steps", "prompts_per_step", "group_size",
                   "max_turns", "context_mode", "catalogue"]


@dataclass(frozen=True)
class Metric:
    """A success measure the table shows: its record columns, its `stats` column prefix, its grid suffix."""

    final: str  # records_frame column of the final value
    warm: str  # records_frame column of the warm start's value
    prefix: str  # stats columns f"{prefix}mean", "se", "n", "best"
    suffix: str  # grid column: env + suffix


SAMPLED = Metric("final_success", "warm_start_success", "", "")
GREEDY = Metric("final_greedy", "warm_start_greedy", "greedy_", " greedy")


@dataclass(frozen=True)
class SuccessTable:
    stats: pd.DataFrame  # long form: env, model, method, row, config_hash, mean, se, n, best (+ greedy_*)
    grid: pd.DataFrame  # display strings, index = row label, columns = envs (+ "<env> greedy")
    protocol: list[str]
    notes: list[str]
    gains: pd.DataFrame  # long form of the paired gain rows (gain_columns())
    warm: pd.DataFrame  # long form of the warm-start rows: env, model, metric (final_*), mean, se, n
    rate_notes: list[str] = field(default_factory=list)  # gain rows over different rl.lr (also in notes)


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
    dirty = sorted({c[:7] + "-dirty" for c in ok["git_commit"].dropna() if str(c).endswith("-dirty")})
    if dirty:
        n = int(ok["git_commit"].fillna("").str.endswith("-dirty").sum())
        notes.append(f"{n} of {len(ok)} records name a commit with uncommitted changes ({', '.join(dirty)}): no "
                     "commit pins the code that ran them")
    metrics = [SAMPLED] + ([GREEDY] if "final_greedy" in ok and ok["final_greedy"].notna().any() else [])
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
            label = f"{model} {method}" + (f" [config {h}]" if len(hashes) > 1 else "")
            rows.append({"env": env, "model": model, "model_params": int(part["model_params"].max()),
                         "method": method, "row": label, "config_hash": h, **_cell_columns(part, SAMPLED),
                         "seeds": ",".join(str(s) for s in sorted(part["seed"]))})
            for m in metrics[1:]:
                rows[-1].update(_cell_columns(part, m))
    stats = pd.DataFrame(rows)
    for m in metrics:
        stats[m.prefix + "best"] = stats[m.prefix + "mean"] == stats.groupby("env")[m.prefix + "mean"].transform("max")
    stats = stats.sort_values(["model_params", "model", "method"], key=lambda s: s.map(method_sort_key) if s.name == "method" else s)
    envs = sorted(stats["env"].unique())
    gains, gain_long, warm, warm_long = [], [], [], []
    for m in metrics:
        g_rows, g_long = _paired_gain_rows(ok, stats, m.final, m.suffix)
        gains += g_rows
        gain_long += g_long
        w_rows, w_notes = _warm_start_rows(ok, m.warm, m.suffix)
        warm += w_rows
        warm_long += [{"env": column.removesuffix(m.suffix), "model": model, "metric": m.final, "mean": mean,
                       "se": se, "n": n} for _, model, column, _, (mean, se, n) in w_rows]
        notes += [n for n in w_notes if n not in notes]
    grid_columns = [env + m.suffix for env in envs for m in metrics
                    if stats.loc[stats["env"] == env, m.prefix + "n"].gt(0).any()]
    order: list[str] = []
    for model in dict.fromkeys(stats["model"]):  # each model's warm start, its methods, then its gain rows
        order += sorted({label for label, m, *_ in warm if m == model})
        order += list(dict.fromkeys(stats.loc[stats["model"] == model, "row"]))
        order += sorted({label for label, m, _, _ in gains if m == model}, key=lambda x: method_sort_key(x.split()[-3]))
    grid = pd.DataFrame("", index=order, columns=grid_columns)
    for r in stats.to_dict("records"):
        for m in metrics:
            n = int(r[m.prefix + "n"])
            if n > 0 and r["env"] + m.suffix in grid.columns:
                text = percent_cell(r[m.prefix + "mean"], r[m.prefix + "se"], n)
                grid.loc[r["row"], r["env"] + m.suffix] = f"**{text}**" if r[m.prefix + "best"] else text
    for label, _, column, text, *_ in gains + warm:
        if column in grid.columns:
            grid.loc[label, column] = text
    grid.index.name = "model / method"
    gains_long = pd.DataFrame(gain_long, columns=gain_columns())
    rates = rate_notes(ok, gains_long)
    return SuccessTable(stats=stats.reset_index(drop=True), grid=grid, protocol=_protocol_lines(ok),
                        notes=notes + rates, gains=gains_long,
                        warm=pd.DataFrame(warm_long, columns=["env", "model", "metric", "mean", "se", "n"]),
                        rate_notes=rates)


def _cell_columns(part: pd.DataFrame, m: Metric) -> dict[str, float | int]:
    mean, se, n = cell_stats(part[m.final])
    return {m.prefix + "mean": mean, m.prefix + "se": se, m.prefix + "n": n}


def gain_columns() -> list[str]:
    return ["env", "model", "method", "base", "metric", "n", "mean", "se", "wins", "losses", "sign_p", "verdict",
            "seeds"]


def _per_seed(ok: pd.DataFrame, env: str, model: str, method: str, config: str, metric: str) -> pd.Series:
    part = ok[(ok["env"] == env) & (ok["model"] == model) & (ok["method"] == method) & (ok["config_hash"] == config)]
    return part.set_index("seed")[metric].dropna().astype(float)


def _paired_gain_rows(ok: pd.DataFrame, stats: pd.DataFrame, metric: str,
                      suffix: str) -> tuple[list[tuple[str, str, str, str]], list[dict]]:
    """(row label, model, grid column, text) for each `base+weighting` method vs `base`, same model and env,
    paired by seed, and the same in long form. Only unsplit cells (one config) are compared."""
    single = stats.groupby(["env", "model", "method"]).filter(lambda g: len(g) == 1)
    index = {(r.env, r.model, r.method): r.config_hash for r in single.itertuples()}
    rows, long = [], []
    for (env, model, method), h in sorted(index.items()):
        base = method.split("+")[0]
        if "+" not in method or (env, model, base) not in index:
            continue
        a = _per_seed(ok, env, model, method, h, metric)
        b = _per_seed(ok, env, model, base, index[(env, model, base)], metric)
        seeds = sorted(set(a.index) & set(b.index))
        if not seeds:
            continue
        g = paired_gain(a[seeds] - b[seeds])
        rows.append((f"{model} gain {method} vs {base}", model, env + suffix, gain_text(g)))
        long.append({"env": env, "model": model, "method": method, "base": base, "metric": metric, **g,
                     "seeds": ",".join(str(s) for s in seeds)})
    return rows, long


def _warm_start_rows(ok: pd.DataFrame, metric: str = "warm_start_success", suffix: str = ""
                     ) -> tuple[list[tuple[str, str, str, str, tuple[float, float, int]]], list[str]]:
    """(row label, model, grid column, text, (mean, se, n)) of the warm-start success (the step-0
    evaluation) per env and model. One value per seed (the methods of a seed share it); omitted, with a note, where runs of one
    seed started from different warm starts (their step-0 successes differ)."""
    out, notes = [], []
    for (env, model), part in ok.dropna(subset=[metric]).groupby(["env", "model"], sort=True):
        per_seed = part.groupby("seed")[metric]
        if (per_seed.nunique() > 1).any():
            notes.append(f"{env} {model}: no warm-start row (runs of one seed start from different warm starts)")
            continue
        mean, se, n = cell_stats(per_seed.first())
        out.append((f"{model} warm start", model, env + suffix, percent_cell(mean, se, n), (mean, se, n)))
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
              "Gain rows: paired by seed (the methods of a seed branch from the same warm start), "
              "mean difference in points ± paired SE (n pairs, seeds won/lost, two-sided sign-test p).", ""]
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
    """Write table.md (+ gains.md where there are gain rows) / table.csv (+ stats.csv, the long form, and
    gains.csv) / table.tex; no timestamps (reproducible)."""
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise ValueError(f"unknown table format(s) {unknown}; choose from {list(FORMATS)}")
    gains_md = [("gains.md", lambda: gains_table.to_markdown(table))] if not table.gains.empty else []
    return write_table_files(out_dir, {
        "md": [("table.md", lambda: to_markdown(table)), *gains_md],
        "csv": [("table.csv", lambda: to_csv(table)), ("stats.csv", lambda: table.stats.to_csv(index=False)),
                ("gains.csv", lambda: table.gains.to_csv(index=False))],
        "tex": [("table.tex", lambda: to_latex(table))],
    }, formats)
