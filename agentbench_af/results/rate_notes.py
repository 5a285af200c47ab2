"""Notes for gain rows whose two methods ran at different learning rates (`rl.lr`).

A gain row (`base+weighting` vs `base`, paired by seed) reads as the weighting's effect only when both
methods ran at the same rate; the project compares methods at matched rates or states the difference
beside the result. Per compared pair this module takes the set of `rl_lr` values (a `records_frame`
column) of each method over the paired seeds and writes one note where the sets differ, where a seed's
two runs differ, or where a method's seeds ran at several rates. A record without a rate counts as "not
recorded" (differs from any recorded rate); pairs where neither side recorded one get no note.
"""

from __future__ import annotations

import math

import pandas as pd

UNRECORDED = "not recorded"


def _rate(value: object) -> str:
    """One rate as written in a note: `4e-4` -> "0.0004"; None / NaN -> "not recorded"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return UNRECORDED
    try:
        return f"{float(value):g}"  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)


def _order(rate: str) -> tuple[int, float, str]:
    """Numeric rates first, ascending; then anything else ("not recorded") by name."""
    try:
        return 0, float(rate), rate
    except ValueError:
        return 1, 0.0, rate


def _rates_text(rates: set[str]) -> str:
    return "/".join(sorted(rates, key=_order))


def _seed_rates(ok: pd.DataFrame, env: str, model: str, method: str, seeds: list[int]) -> dict[int, str]:
    part = ok[(ok["env"] == env) & (ok["model"] == model) & (ok["method"] == method) & ok["seed"].isin(seeds)]
    return {int(r.seed): _rate(r.rl_lr) for r in part.itertuples()}


def rate_notes(ok: pd.DataFrame, gains: pd.DataFrame) -> list[str]:
    """One note per (env, model, method, base) of `gains` (a `gain_columns()` frame, `seeds` comma-joined)
    whose runs in `ok` (a `records_frame`: env, model, method, seed, rl_lr) do not share one learning rate.
    Seeds are pooled over the pair's measures (sampled, greedy). Only unsplit cells have gain rows, so
    (env, model, method, seed) names one run."""
    if gains.empty:
        return []
    notes = []
    for (env, model, method, base), rows in gains.groupby(["env", "model", "method", "base"], sort=True):
        seeds = sorted({int(s) for text in rows["seeds"] for s in str(text).split(",")})
        mine, theirs = _seed_rates(ok, env, model, method, seeds), _seed_rates(ok, env, model, base, seeds)
        a, b = set(mine.values()), set(theirs.values())
        if a | b <= {UNRECORDED}:
            continue
        unmatched = [s for s in seeds if s in mine and s in theirs and mine[s] != theirs[s]]
        head = f"{env} {model}: "
        if a != b:
            notes.append(head + f"{method} ran at rl.lr {_rates_text(a)}, its base {base} at {_rates_text(b)}: its "
                         "gain row compares different learning rates, not the weighting alone")
        elif unmatched:
            notes.append(head + f"{method} and its base {base} both ran at rl.lr {_rates_text(a)} but not matched on "
                         f"seed(s) {unmatched}: its gain row compares different learning rates, not the weighting "
                         "alone")
        elif len(a) > 1:
            notes.append(head + f"{method} and its base {base} ran at rl.lr {_rates_text(a)} (matched seed by seed): "
                         "its gain row pools several learning rates")
    return notes
