"""A paired study's analysis from run records: does each base method learn, and what does each weighting
of it change, paired by seed.

Methods are named by their label (`credit.method_label`: `grpo+actfocus`, `grpo@gspo`).
1. **Learning** (per env, model and method): each seed's change from its warm start, at T = 1 and greedy,
   with mean, paired SE over seeds and seeds above / below. A base method (no `+` or `@`) *learns*
   where the learnable-benchmark bar holds: mean change at T = 1 at least `LEARN_SE` (4) paired SEs above
   zero, mean greedy change above zero, and at least ceil(5 n / 6) of its n seeds above their warm start at
   T = 1 (5 of 6).
2. **Contrasts** (per env, model and `treated` vs `base` pair): per-seed differences of final success,
   mean, paired SE, seeds won / lost, two-sided paired t-test, sign test and Wilcoxon signed-rank p. The
   primary contrasts (T = 1) get Holm's correction of the t-test's p across every (env, model, pair); the
   greedy ones are secondary and uncorrected. A primary contrast reads "better" / "worse" only where Holm's
   p < alpha; "better" counts only where its base learns (else "held / lost less"), and every contrast is
   reported whatever it shows.

Seeds are paired only where both runs exist and branched from one warm start (the same settings key and the
same step-0 evaluation, sampled and greedy); other seeds are listed as unpaired.

**Bases rerun from a rebuilt warm start** (`contrast_only` paths). A warm start rebuilt on another CPU can
evaluate differently from the original (float kernels differ), so runs branched from it cannot be paired with
the original's base run. A base method rerun from the rebuilt warm start supplies that seed's pair: records
under `contrast_only` enter the contrasts (each treated run is paired with the base run of its own warm
start) and stay out of the learning table, which keeps one run per seed from the study's own paths.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from agentbench_af.results.collect_records import records_frame
from agentbench_af.results.factorial import (
    METRICS,
    TIE,
    WARM,
    holm,
    p_text,
    paired_stats,
    pairing_unit,
    primary_verdict,
)

LEARN_SE = 4.0


@dataclass(frozen=True)
class StudySpec:
    """`pairs`: (treated, base) method names; empty = every `<base>+<weighting>` whose base is present."""

    pairs: tuple[tuple[str, str], ...] = ()  # (treated, base) method labels
    alpha: float = 0.05


def study_records(paths: Iterable[str | Path], contrast_only: Iterable[str | Path] = ()) -> pd.DataFrame:
    """The completed records under `paths` and `contrast_only` with the columns the analysis reads (one row per
    run); `in_learning` is False for those under `contrast_only` (bases rerun from a rebuilt warm start), and
    `unit` names the seed and the warm start a run branched from (its pairing unit)."""
    frame = records_frame(paths).assign(in_learning=True)
    contrast_only = list(contrast_only)
    if contrast_only:
        frame = pd.concat([frame, records_frame(contrast_only).assign(in_learning=False)], ignore_index=True)
    frame = frame[frame["status"] == "completed"].copy()
    frame["seed"] = frame["seed"].astype(int)
    frame["unit"] = [pairing_unit(row) for _, row in frame.iterrows()]
    for part, key, what in ((frame[frame["in_learning"]], "seed", "seed"), (frame, "unit", "seed and warm start")):
        keys = ["env", "model", "method", key]
        duplicated = part.duplicated(keys, keep=False)
        if duplicated.any():
            twice = part[duplicated].sort_values(keys)
            raise ValueError(f"two records for one (env, model, method, {what}): "
                             + ", ".join(twice["path"].head(4)) + (" ..." if len(twice) > 4 else ""))
    return frame


def base_of(label: str) -> str:
    """The base method of a method label: `grpo+actfocus` and `grpo@gspo` -> `grpo`."""
    return label.split("@", 1)[0].split("+", 1)[0]


def default_pairs(methods: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """(treated, base) for every label among `methods` with a weighting or an update rule (`<base>+<weighting>`,
    `<base>@<policy>`) whose base method is there too."""
    present = set(methods)
    return tuple((m, base_of(m)) for m in sorted(present) if base_of(m) != m and base_of(m) in present)


def seeds_needed(n: int) -> int:
    """Seeds that must end above their warm start: ceil(5 n / 6) (5 of 6)."""
    return math.ceil(5 * n / 6 - 1e-9)


def learning(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (env, model, method): change from the warm start at T = 1 and greedy, and the bar."""
    rows = []
    own = frame[frame["in_learning"]] if "in_learning" in frame else frame
    for (env, model, method), part in own.groupby(["env", "model", "method"], sort=True):
        row: dict[str, Any] = {"env": env, "model": model, "method": method, "n": len(part)}
        for metric, name in (("final_success", "t1"), ("final_greedy", "greedy")):
            stats = paired_stats(part[metric].astype(float) - part[WARM[metric]].astype(float))
            row.update({f"{name}_warm": float(part[WARM[metric]].astype(float).mean()),
                        f"{name}_final": float(part[metric].astype(float).mean()),
                        f"{name}_change": stats["mean"], f"{name}_se": stats["se"],
                        f"{name}_up": stats["wins"], f"{name}_down": stats["losses"]})
        row["base"] = base_of(method) == method
        row["learns"] = bool(row["t1_change"] >= LEARN_SE * row["t1_se"] and row["t1_change"] > TIE
                             and row["greedy_change"] > TIE and row["t1_up"] >= seeds_needed(row["n"]))
        rows.append(row)
    return pd.DataFrame(rows)


def contrasts(frame: pd.DataFrame, spec: StudySpec, learned: pd.DataFrame) -> pd.DataFrame:
    """One row per (env, model, pair, metric); primary rows (T = 1) carry `holm_p` and a verdict."""
    pairs = spec.pairs or default_pairs(frame["method"].unique())
    if not pairs:
        raise ValueError("no (treated, base) pair: name them (e.g. grpo+actfocus:grpo) or include both methods")
    learns = {(r["env"], r["model"], r["method"]): r["learns"] for r in learned.to_dict("records")}
    rows: list[dict[str, Any]] = []
    for (env, model), part in frame.groupby(["env", "model"], sort=True):
        for treated, base in pairs:
            t = part[part["method"] == treated].set_index("unit")
            b = part[part["method"] == base].set_index("unit")
            if t.empty or b.empty:
                continue
            units = sorted(set(t.index) & set(b.index), key=lambda u: (int(t.loc[u, "seed"]), u))
            seeds_of = [int(t.loc[u, "seed"]) for u in units]
            if len(set(seeds_of)) < len(seeds_of):
                twice = sorted({s for s in seeds_of if seeds_of.count(s) > 1})
                raise ValueError(f"{env} {model}: {treated} and {base} pair on two warm starts of seed(s) {twice}; "
                                 "keep one pair of runs per seed")
            paired = seeds_of
            unpaired = sorted((set(t["seed"]) | set(b["seed"])) - set(paired))
            for metric, label in METRICS.items():
                diffs = t.loc[units, metric].astype(float) - b.loc[units, metric].astype(float)  # aligned on unit
                rows.append({"env": env, "model": model, "treated": treated, "base": base, "metric": label,
                             "primary": metric == "final_success", **paired_stats(diffs),
                             "base_learns": learns.get((env, model, base), False),
                             "seeds": ",".join(map(str, paired)), "unpaired": ",".join(map(str, unpaired))})
    out = pd.DataFrame(rows)
    if out.empty:
        raise ValueError(f"no pair {', '.join(f'{t} vs {b}' for t, b in pairs)} has runs of both methods")
    out["holm_p"] = math.nan
    primary = out.index[out["primary"]]
    out.loc[primary, "holm_p"] = holm(out.loc[primary, "t_p"].tolist())
    out["verdict"] = [primary_verdict(r, spec.alpha, r["base_learns"], "held / lost less (base did not learn)")
                      for r in out.to_dict("records")]
    return out


def _pm(mean: float, se: float, up: int, down: int, n: int) -> str:
    se_text = "" if math.isnan(se) else f" ± {se * 100:.1f}"
    return f"{mean * 100:+.1f}{se_text} ({up}+/{down}- of {n})"


def cost_line(frame: pd.DataFrame) -> str:
    """The runs' summed CPU and wall-clock hours (warm starts not included: their SFT cost is in each warm
    start's `warm_start.yaml`); records written before CPU time was kept count 0 and are named."""
    cpu = frame["cpu_time_s"].fillna(0.0).astype(float)
    untimed = int((cpu <= 0).sum())
    text = (f"Cost of the {len(frame)} runs (RL and evaluation, warm starts not included): "
            f"{cpu.sum() / 3600:.1f} CPU-hours, {frame['wall_time_s'].astype(float).sum() / 3600:.1f} hours of wall time")
    return text + (f"; {untimed} records carry no CPU time." if untimed else ".")


def to_markdown(learned: pd.DataFrame, table: pd.DataFrame, spec: StudySpec, frame: pd.DataFrame | None = None) -> str:
    lines = [
        "# Study: learning from the warm start, and each weighting against its base",
        "",
        "Success in points (percent of evaluation episodes). Runs of one seed branch from one warm start.",
        "",
        "## Change from the warm start",
        "",
        f"Mean over seeds ± paired SE (seeds above / below their warm start of n). A base method learns where its "
        f"mean change at T = 1 is at least {LEARN_SE:g} SE above zero, its mean greedy change is above zero and "
        "at least 5 of 6 seeds (ceil(5 n / 6)) end above their warm start at T = 1.",
        "",
        "| env | model | method | warm start T = 1 / greedy | final T = 1 / greedy | change T = 1 | change greedy | learns |",
        "|:--|:--|:--|--:|--:|:--|:--|:--|",
    ]
    for r in learned.to_dict("records"):
        verdict = ("yes" if r["learns"] else "no") if r["base"] else ""
        lines.append(
            f"| {r['env']} | {r['model']} | {r['method']} | {r['t1_warm'] * 100:.1f} / {r['greedy_warm'] * 100:.1f} | "
            f"{r['t1_final'] * 100:.1f} / {r['greedy_final'] * 100:.1f} | "
            f"{_pm(r['t1_change'], r['t1_se'], r['t1_up'], r['t1_down'], r['n'])} | "
            f"{_pm(r['greedy_change'], r['greedy_se'], r['greedy_up'], r['greedy_down'], r['n'])} | {verdict} |")
    lines += [
        "",
        "## Each weighting against its base, paired by seed",
        "",
        "Treated minus base, mean ± paired SE (seeds won / lost of n); two-sided p of the paired t-test, sign "
        "test and Wilcoxon signed-rank test; Holm: the t-test's p corrected across the primary (T = 1, bold) "
        f"contrasts; the verdict at alpha {spec.alpha} counts a gain only where the base learns.",
        "",
        "| env | model | contrast | metric | difference | t p | sign p | Wilcoxon p | Holm p | verdict |",
        "|:--|:--|:--|:--|:--|--:|--:|--:|--:|:--|",
    ]
    for r in table.to_dict("records"):
        name = f"{r['treated']} vs {r['base']}"
        name = f"**{name}**" if r["primary"] else name
        lines.append(f"| {r['env']} | {r['model']} | {name} | {r['metric']} | "
                     f"{_pm(r['mean'], r['se'], r['wins'], r['losses'], r['n'])} | {p_text(r['t_p'])} | "
                     f"{p_text(r['sign_p'])} | {p_text(r['wilcoxon_p'])} | {p_text(r['holm_p'])} | {r['verdict']} |")
    lines += ["", cost_line(frame)] if frame is not None else []
    unpaired = sorted({(r["env"], r["model"], f"{r['treated']} vs {r['base']}", r["unpaired"])
                       for r in table.to_dict("records") if r["unpaired"]})
    if unpaired:
        lines += ["", "Seeds left out of a contrast (a run missing, or warm starts that differ): " + "; ".join(
            f"{e} {m} {c}: {u}" for e, m, c, u in unpaired)]
    return "\n".join(lines) + "\n"
