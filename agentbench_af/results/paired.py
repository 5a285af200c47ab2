"""A method against its base, paired by seed (the methods of a seed share one warm start), and the
confirmatory presets' rule.

- `paired_gain(diffs)`: of the per-seed differences (method minus base): mean, SE (sd of the differences
  / sqrt(n); NaN for one pair), wins and losses (|d| < 1e-9 is a tie), the two-sided sign test's p
  (`scipy.stats.binomtest` on the non-tied pairs; 1.0 when every pair ties) and the `verdict`.
- `verdict(mean, sign_p)`: "better" / "worse" where p < SIGN_TEST_ALPHA in the mean's direction, else
  "not distinguished".
Left out: corrections for multiple comparisons (the tables show every comparison; readers weigh them).
"""

from __future__ import annotations

import math

import pandas as pd
from scipy.stats import binomtest

SIGN_TEST_ALPHA = 0.05


def verdict(mean: float, sign_p: float, alpha: float = SIGN_TEST_ALPHA) -> str:
    """The confirmatory rule: "better" / "worse" where the sign test's p < alpha and the paired mean is
    positive / negative, else "not distinguished"."""
    if sign_p >= alpha or mean == 0:
        return "not distinguished"
    return "better" if mean > 0 else "worse"


def paired_gain(diffs: pd.Series) -> dict[str, float | int | str]:
    """Mean, paired SE (NaN for one pair), wins, losses (|d| < 1e-9 is a tie), the two-sided sign test's
    p over the non-tied pairs (1.0 when every pair ties) of per-seed differences, and its `verdict`."""
    d = diffs.astype(float)
    n = len(d)
    wins, losses = int((d > 1e-9).sum()), int((d < -1e-9).sum())
    p = binomtest(wins, wins + losses, 0.5).pvalue if wins + losses else 1.0
    se = float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    mean = float(d.mean())
    return {"n": n, "mean": mean, "se": se, "wins": wins, "losses": losses, "sign_p": float(p),
            "verdict": verdict(mean, float(p))}
