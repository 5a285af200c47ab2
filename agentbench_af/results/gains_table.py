"""`gains.md`: the paired gains of a table on one screen, for a README to lead with.

One row per (environment, model, success measure), the warm start's success, then one column per
reweighting vs its base method (e.g. `grpo+actfocus vs grpo`): the paired gain as in `table.md`'s gain rows
(mean ± paired SE in points, n pairs, seeds won/lost, sign-test p) followed by the verdict of the
confirmatory rule (**better** / **worse** where p < SIGN_TEST_ALPHA in the mean's direction, else n.d.).
Generated from a `results.table.SuccessTable` only, read through `GainsSource` (the three frames it
needs, and the table's learning-rate notes, listed under the grid after "Learning rates differ:" so that a
copy of the grid's lines is followed by its warning in the file), so this module sits below
`results.table`, which writes `gains.md` with it. Left out: each
method's own success (`table.md`) and the diagnostic (`bottleneck.md`).
"""

from __future__ import annotations

from typing import Protocol

import pandas as pd

from agentbench_af.results.paired import SIGN_TEST_ALPHA
from agentbench_af.results.table_text import gain_text, method_sort_key, percent_cell

MEASURES = {"final_success": "sampled", "final_greedy": "greedy"}  # gains.csv metric -> row label


class GainsSource(Protocol):
    """What this module reads of a `SuccessTable`: its gains, warm-start and per-cell statistics frames, and
    the notes on gain rows whose methods ran at different learning rates."""

    @property
    def gains(self) -> pd.DataFrame: ...

    @property
    def warm(self) -> pd.DataFrame: ...

    @property
    def stats(self) -> pd.DataFrame: ...

    @property
    def rate_notes(self) -> list[str]: ...


def _verdict_mark(verdict: str) -> str:
    return {"better": "**better**", "worse": "**worse**"}.get(verdict, "n.d.")


def gains_frame(table: GainsSource) -> pd.DataFrame:
    """The display grid: index (env, model, measure), columns "warm start" then each comparison."""
    g = table.gains
    if g.empty:
        return pd.DataFrame()
    g = g.assign(comparison=g["method"] + " vs " + g["base"],
                 text=[f"{gain_text(r)} {_verdict_mark(r['verdict'])}" for r in g.to_dict("records")])
    comparisons = sorted(g["comparison"].unique(), key=lambda c: method_sort_key(c.split(" vs ")[0]))
    grid = g.pivot(index=["env", "model", "metric"], columns="comparison", values="text")[comparisons].fillna("")
    warm = {(r["env"], r["model"], r["metric"]): percent_cell(r["mean"], r["se"], r["n"])
            for r in table.warm.to_dict("records")}
    grid.insert(0, "warm start", [warm.get(key, "") for key in grid.index])
    params = table.stats.groupby("model")["model_params"].max().to_dict()
    order = sorted(grid.index, key=lambda k: (k[0], params.get(k[1], 0), k[1], list(MEASURES).index(k[2])))
    grid = grid.loc[order]
    grid.index = pd.MultiIndex.from_tuples([(e, m, MEASURES[x]) for e, m, x in grid.index],
                                           names=["env", "model", "success"])
    grid.columns.name = None
    return grid


def to_markdown(table: GainsSource) -> str:
    grid = gains_frame(table).reset_index()
    return "\n".join([
        "# Paired gains over the base method (points of final-step success)", "",
        "Rows: environment, model, success measure (sampled: at the protocol's evaluation temperature; greedy). "
        "Warm start: its success, mean ± SE over seeds (n). Other columns: per seed the method's success minus "
        "its base's (both branch from the seed's warm start), mean ± paired SE (n pairs, seeds won/lost, "
        f"two-sided sign-test p), then the verdict: **better** / **worse** where p < {SIGN_TEST_ALPHA} in the "
        "mean's direction, n.d. (not distinguished) otherwise.", "",
        grid.to_markdown(index=False),
        *(["", "Learning rates differ:", *(f"- {n}" for n in table.rate_notes)] if table.rate_notes else [])]) + "\n"
