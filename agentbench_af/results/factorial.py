"""A 2 x 2 factorial analysis of run records: a treated method against its base (e.g. `grpo+actfocus` vs
`grpo`) crossed with two levels of one config value (e.g. `rl.lr` 1e-4 and 4e-4), paired by seed.

Every contrast is a per-seed difference between runs that branch from the same warm start (same env, model
and seed; the records' warm-start keys and step-0 evaluations are checked): the treatment effect at each level, the level effect
for each method, their interaction ((T@hi - B@hi) - (T@lo - B@lo)), and each cell's change from its warm
start. Per contrast: mean, paired SE, seeds won/lost, two-sided paired t-test, sign test and Wilcoxon
signed-rank p. The primary contrasts (the treatment effect at each level, on the primary metric) get a Holm
correction of the t-test's p across every (env, model, level); the others are reported uncorrected.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from scipy.stats import binomtest, ttest_1samp, wilcoxon

from agentbench_af.results.collect_records import find_records
from agentbench_af.results.record import RunRecord

METRICS = {"final_success": "T = 1", "final_greedy": "greedy"}
WARM = {"final_success": "warm_start_success", "final_greedy": "warm_start_greedy"}
TIE = 1e-9


@dataclass(frozen=True)
class FactorialSpec:
    """Which runs make the 2 x 2: `treated` vs `base` method, at two values of the dotted config key
    `factor` (`levels`: low, high; the two values found in the records when empty)."""

    base: str
    treated: str
    factor: str = "rl.lr"
    levels: tuple[Any, ...] = ()
    primary_metric: str = "final_success"
    alpha: float = 0.05


def config_value(config: dict[str, Any], dotted: str) -> Any:
    """`config["rl"]["lr"]` for "rl.lr"; KeyError naming the key when a part is missing."""
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(f"config has no {dotted!r}")
        node = node[part]
    return node


def factorial_records(paths: Iterable[str | Path], spec: FactorialSpec) -> pd.DataFrame:
    """One row per completed record of `spec.base` or `spec.treated`: env, model, seed, method, level,
    success metrics, warm-start metrics and warm-start key."""
    rows = []
    for path in find_records(paths):
        r = RunRecord.load(path)
        if r.method not in (spec.base, spec.treated) or r.status != "completed":
            continue
        greedy_warm = next((c.get("greedy_success") for c in r.curve if c.get("step") == 0), None)
        rows.append({
            "env": r.env_id, "model": r.model, "seed": int(r.seed), "method": r.method,
            "level": config_value(r.config, spec.factor),
            "final_success": r.final_success, "final_greedy": r.final_metrics.get("greedy_success"),
            "warm_start_success": r.warm_start_success, "warm_start_greedy": greedy_warm,
            "warm_key": (r.warm_start or {}).get("key"), "git_commit": r.git_commit, "path": str(path),
        })
    columns = ["env", "model", "seed", "method", "level", "final_success", "final_greedy", "warm_start_success",
               "warm_start_greedy", "warm_key", "git_commit", "path"]
    return pd.DataFrame(rows, columns=columns)


def paired_stats(diffs: pd.Series) -> dict[str, Any]:
    """Mean, paired SE, wins/losses (|d| < 1e-9 ties), two-sided paired t-test, sign-test and Wilcoxon
    p of per-seed differences (NaN p where undefined: fewer than 2 pairs, or every pair tied)."""
    d = diffs.astype(float).to_numpy()
    n = len(d)
    wins, losses = int((d > TIE).sum()), int((d < -TIE).sum())
    mean = float(d.mean()) if n else math.nan
    se = float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    if n > 1 and se > 1e-12:  # below: identical differences up to rounding, no variance to test
        t_p = float(ttest_1samp(d, 0.0).pvalue)
    elif n > 1 and abs(mean) <= TIE:
        t_p = 1.0  # every difference is zero
    else:
        t_p = math.nan  # one pair, or identical non-zero differences (no variance to test against)
    sign_p = float(binomtest(wins, wins + losses, 0.5).pvalue) if wins + losses else 1.0
    nonzero = d[abs(d) > TIE]
    wilcoxon_p = float(wilcoxon(nonzero).pvalue) if len(nonzero) else 1.0
    return {"n": n, "mean": mean, "se": se, "wins": wins, "losses": losses, "t_p": t_p, "sign_p": sign_p,
            "wilcoxon_p": wilcoxon_p}


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input order (NaN stays NaN and is not counted)."""
    finite = sorted((p, i) for i, p in enumerate(pvalues) if not math.isnan(p))
    m = len(finite)
    adjusted = [math.nan] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(finite):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


def _plain(value: Any) -> Any:
    """None for a missing value (NaN and None compare equal here), else the value."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def warm_identity(row: Any) -> tuple[Any, ...]:
    """What makes two runs branch from one warm start: its settings key and its step-0 success, sampled and
    greedy (a rebuilt warm start must evaluate exactly as the original)."""
    return tuple(_plain(row[k]) for k in ("warm_key", "warm_start_success", "warm_start_greedy"))


def pairing_unit(row: Any) -> str:
    """A run's pairing unit: its seed and the warm start it branched from (`warm_identity`)."""
    return f"{row['seed']}|{warm_identity(row)}"


def _one_run_per_unit(cell: pd.DataFrame, env: str, method: str, level: Any) -> pd.DataFrame:
    """A cell's runs indexed by pairing unit; two records of one run (the same seed and warm start) are an error."""
    doubled = sorted(set(cell.loc[cell["unit"].duplicated(), "seed"]))
    if doubled:
        raise ValueError(f"{env}: {method} @ {_fmt_level(level)} has more than one record for seed(s) {doubled} "
                         f"from one warm start: {sorted(cell.loc[cell['seed'].isin(doubled), 'path'])}")
    return cell.set_index("unit")


def _levels(frame: pd.DataFrame, spec: FactorialSpec) -> tuple[Any, Any]:
    levels = spec.levels or tuple(sorted(frame["level"].unique()))
    if len(levels) != 2:
        raise ValueError(f"{spec.factor}: a 2 x 2 needs exactly two levels, found {list(levels)}")
    return levels[0], levels[1]


def _fmt_level(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def contrasts(frame: pd.DataFrame, spec: FactorialSpec) -> pd.DataFrame:
    """Every contrast per (env, model, metric), one row each; `primary` rows carry `holm_p`.

    A seed is paired where all four cells exist from one warm start (its settings key and its step-0 success,
    sampled and greedy: a rebuilt warm start must evaluate exactly as the original). A seed whose original
    cells came from one warm start and whose rerun cells from a rebuilt one that evaluates differently is
    paired on whichever of the two has all four cells; other seeds are listed in `unpaired`."""
    lo, hi = _levels(frame, spec)
    b, t = spec.base, spec.treated
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    for (env, model), part in frame.groupby(["env", "model"], sort=True):
        # the pairing unit: a seed and the warm start its run branched from
        part = part.assign(unit=[pairing_unit(row) for _, row in part.iterrows()])
        seed_of = dict(zip(part["unit"], part["seed"], strict=True))
        cells = {(m, lv): _one_run_per_unit(part[(part["method"] == m) & (part["level"] == lv)], env, m, lv)
                 for m in (b, t) for lv in (lo, hi)}
        units = sorted(set.intersection(*(set(c.index) for c in cells.values())), key=lambda u: (seed_of[u], u))
        by_seed: dict[Any, list[str]] = {}
        for u in units:
            by_seed.setdefault(seed_of[u], []).append(u)
        twice = [s for s, us in by_seed.items() if len(us) > 1]
        if twice:
            raise ValueError(f"{env} {model}: seed(s) {twice} have all four cells from two different warm starts; "
                             "keep one set of records per seed")
        paired_units = [us[0] for us in by_seed.values()]
        paired = [seed_of[u] for u in paired_units]
        unpaired = sorted(set(part["seed"]) - set(paired))
        if not paired:
            skipped.append(f"{env} {model}: seeds {','.join(str(s) for s in unpaired)}")
            continue
        for metric in METRICS:
            x = {k: c.loc[paired_units, metric].astype(float) for k, c in cells.items()}
            warm = cells[(b, lo)].loc[paired_units, WARM[metric]].astype(float)
            L, H = _fmt_level(lo), _fmt_level(hi)
            named = [
                (f"{t} vs {b} @ {L}", "treatment", L, x[(t, lo)] - x[(b, lo)]),
                (f"{t} vs {b} @ {H}", "treatment", H, x[(t, hi)] - x[(b, hi)]),
                (f"{b}: {H} vs {L}", "level", "", x[(b, hi)] - x[(b, lo)]),
                (f"{t}: {H} vs {L}", "level", "", x[(t, hi)] - x[(t, lo)]),
                ("interaction", "interaction", "", (x[(t, hi)] - x[(b, hi)]) - (x[(t, lo)] - x[(b, lo)])),
                *((f"{m} @ {_fmt_level(lv)} vs warm start", "from warm start", _fmt_level(lv), x[(m, lv)] - warm)
                  for m in (b, t) for lv in (lo, hi)),
            ]
            for name, kind, level, diffs in named:
                rows.append({"env": env, "model": model, "metric": METRICS[metric], "contrast": name, "kind": kind,
                             "level": level,
                             "primary": kind == "treatment" and metric == spec.primary_metric,
                             **paired_stats(diffs), "seeds": ",".join(str(s) for s in paired),
                             "unpaired": ",".join(str(s) for s in unpaired)})
    out = pd.DataFrame(rows)
    if out.empty:
        raise ValueError(f"no seed has all four cells ({b} and {t} at {_fmt_level(lo)} and {_fmt_level(hi)}) "
                         f"from one warm start; {'; '.join(skipped) or 'no records'}")
    out["holm_p"] = math.nan
    prim = out.index[out["primary"]]
    out.loc[prim, "holm_p"] = holm(out.loc[prim, "t_p"].tolist())
    base_gain = {(r["env"], r["model"], r["metric"], r["contrast"]): r["mean"] for r in out.to_dict("records")}
    out["verdict"] = [
        _verdict(r, spec.alpha, base_gain.get((r["env"], r["model"], r["metric"], f"{b} @ {r['level']} vs warm start")))
        for r in out.to_dict("records")]
    return out


def primary_verdict(row: dict[str, Any], alpha: float, base_learned: bool, held: str = "held / lost less") -> str:
    """Primary rows only: "better" / "worse" where Holm's p < alpha; a "better" whose base did not learn
    reads `held`; else "not distinguished" (and "" for a secondary row)."""
    if not row["primary"]:
        return ""
    p = row["holm_p"]
    if math.isnan(p) or p >= alpha or abs(row["mean"]) <= TIE:
        return "not distinguished"
    if row["mean"] < 0:
        return "worse"
    return "better" if base_learned else held


def _verdict(row: dict[str, Any], alpha: float, base_from_warm: float | None) -> str:
    """A "better" counts where the base ended above its warm start (mean change > 0)."""
    return primary_verdict(row, alpha, base_from_warm is not None and base_from_warm > TIE)


def p_text(p: float) -> str:
    return "-" if math.isnan(p) else f"{p:.3f}"


def to_markdown(table: pd.DataFrame, spec: FactorialSpec) -> str:
    """The contrasts as one Markdown table (points = percentage points of success)."""
    lines = [
        f"# 2 x 2: {spec.treated} vs {spec.base} x {spec.factor}",
        "",
        "Per-seed differences of final-step success in points (runs paired by env, model and seed, from one "
        "warm start), mean ± paired SE (n seeds, won/lost); two-sided p of the paired t-test, sign test and "
        "Wilcoxon signed-rank test; Holm: the t-test's p corrected across the primary contrasts (the treatment "
        f"effect at each level, {METRICS[spec.primary_metric]}), with the verdict at alpha {spec.alpha}.",
        "",
        "| env | model | metric | contrast | difference | t p | sign p | Wilcoxon p | Holm p | verdict |",
        "|:--|:--|:--|:--|:--|--:|--:|--:|--:|:--|",
    ]
    for r in table.to_dict("records"):
        se = "" if math.isnan(r["se"]) else f" ± {r['se'] * 100:.1f}"
        diff = f"{r['mean'] * 100:+.1f}{se} (n {r['n']}, {r['wins']}+/{r['losses']}-)"
        name = f"**{r['contrast']}**" if r["primary"] else r["contrast"]
        lines.append(f"| {r['env']} | {r['model']} | {r['metric']} | {name} | {diff} | {p_text(r['t_p'])} | "
                     f"{p_text(r['sign_p'])} | {p_text(r['wilcoxon_p'])} | {p_text(r['holm_p'])} | {r['verdict']} |")
    unpaired = sorted({(r["env"], r["model"], r["unpaired"]) for r in table.to_dict("records") if r["unpaired"]})
    if unpaired:
        lines += ["", "Seeds left out (a cell missing, or warm starts that differ): " + "; ".join(
            f"{e} {m}: {u}" for e, m, u in unpaired)]
    return "\n".join(lines) + "\n"
