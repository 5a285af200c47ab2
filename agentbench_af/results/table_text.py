"""Cell texts and row order shared by the result tables (`table.md`, `gains.md`, `bottleneck.md`).

- `percent_cell(mean, se, n)`: a success cell, `mean ± SE (n)` in percent, one decimal (no SE for one
  value or an undefined SE).
- `ratio_cell(mean, se, n)`: a ratio cell, `mean ± SE (n)` with two decimals; "–" for no value.
- `signed(x)`: one decimal with its sign, never "-0.0".
- `gain_text(g)`: a paired gain (`results.paired.paired_gain`) in points: `+d ± SE (n k, w+/l-, p x)`.
- `method_sort_key(method)`: rows in the credit registry's estimator order, then by weighting.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from agentbench_af.credit import method_names


def percent_cell(mean: float, se: float, n: int) -> str:
    se_txt = f" ± {se * 100:.1f}" if n > 1 and not math.isnan(se) else ""
    return f"{mean * 100:.1f}{se_txt} ({n})"


def ratio_cell(mean: float, se: float, n: int) -> str:
    if n == 0:
        return "–"
    se_txt = f" ± {se:.2f}" if n > 1 and not math.isnan(se) else ""
    return f"{mean:.2f}{se_txt} ({n})"


def signed(x: float) -> str:
    x = round(x, 10) + 0.0  # no "-0.0" from rounding noise
    return f"{x:+.1f}"


def gain_text(g: Mapping[str, Any]) -> str:
    """`g`: a `paired_gain` dict (or a row of `gains.csv`): mean, se, n, wins, losses, sign_p."""
    se_txt = f" ± {g['se'] * 100:.1f}" if not math.isnan(g["se"]) else ""
    return f"{signed(g['mean'] * 100)}{se_txt} (n {g['n']}, {g['wins']}+/{g['losses']}-, p {g['sign_p']:.2f})"


def method_sort_key(method: str) -> tuple[int, str, str]:
    """Rows follow the credit registry's estimator order (built-ins, then plugins), then the weighting;
    a base no loaded module registers (a record from an absent plugin) comes last, by name."""
    order = method_names()
    base, _, weighting = method.partition("+")
    return (order.index(base) if base in order else len(order), base if base not in order else "", weighting)
