"""Compare a run record with a re-run of its config: exact match where one is expected, else a z score.

An exact match is expected when both fingerprints are of the same class (`fingerprint.same_class`) and
the code is the same: equal `code_hash`, or the record's commit is a clean tree whose code folders
(`CODE_PATHS`) do not differ from the clean tree re-running it. Exact means the same final and
warm-start success, final metrics and learning curve. Otherwise the re-run is one more draw of a run
that is numerically nearby, and the difference in success is measured in standard errors of the
two-proportion test over the evaluation episodes: with x_i = p_i n_i successes,
p = (x_1 + x_2) / (n_1 + n_2) and SE = sqrt(p (1 - p) (1/n_1 + 1/n_2)); z = (p_2 - p_1) / SE, and 0
when SE is 0 (then p_1 = p_2). A cell fails when an expected exact match is not met or |z| > `MAX_Z`
for the final or the warm-start success. Left out: the spread between training seeds (a re-run on
other hardware can drift further than the evaluation noise; 3 SE is the agreed tolerance).
"""

from __future__ import annotations

import math
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentbench_af.results.fingerprint import class_differences
from agentbench_af.results.record import RunRecord

MAX_Z = 3.0
#: the folders and files whose content decides a run (relative to the repository root)
CODE_PATHS = ("agentbench_af", "environments", "baselines", "pyproject.toml", "setup.py")
_PACKAGE_DIR = Path(__file__).resolve().parents[1]


def success_z(p1: float | None, p2: float | None, n1: int, n2: int) -> float | None:
    """(p2 - p1) in standard errors of the pooled two-proportion test; None when a value is missing."""
    if p1 is None or p2 is None or n1 <= 0 or n2 <= 0:
        return None
    pooled = (p1 * n1 + p2 * n2) / (n1 + n2)
    se = math.sqrt(max(pooled * (1.0 - pooled), 0.0) * (1.0 / n1 + 1.0 / n2))
    return 0.0 if se == 0.0 else (p2 - p1) / se


def code_unchanged(commit_a: str, commit_b: str, repo: Path | None = None) -> bool | None:
    """Whether `CODE_PATHS` (from the repository root) are identical at two commits; None when git cannot tell."""
    if commit_a == commit_b:
        return True
    cwd = repo or _PACKAGE_DIR
    try:
        out = subprocess.run(["git", "diff", "--quiet", commit_a, commit_b, "--", *(f":(top){p}" for p in CODE_PATHS)],
                             cwd=cwd, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return {0: True, 1: False}.get(out.returncode)


def _commit_label(commit: str | None, clean: bool | None) -> str:
    if commit is None:
        return "no commit"
    return commit[:7] + ("" if clean else "-dirty" if clean is False else "?")


def same_code(recorded: RunRecord, here: dict[str, Any]) -> tuple[bool, str]:
    """Whether the record ran the code that `here` (the re-run's fingerprint) runs, and why not."""
    fp = recorded.fingerprint or {}
    if fp.get("code_hash") and fp.get("code_hash") == here.get("code_hash"):
        return True, ""
    commit = fp.get("commit") if fp else (recorded.git_commit or "").removesuffix("-dirty") or None
    clean = fp.get("clean") if fp else (None if recorded.git_commit is None else not recorded.git_commit.endswith("-dirty"))
    label = f"code: record {_commit_label(commit, clean)}, here {_commit_label(here.get('commit'), here.get('clean'))}"
    if not (commit and clean and here.get("commit") and here.get("clean")):
        return False, label + " (an uncommitted tree cannot be compared)"
    unchanged = code_unchanged(commit, here["commit"])
    if unchanged:
        return True, ""
    return False, label + (" (code differs)" if unchanged is False else " (git cannot compare them)")


def exact_expected(recorded: RunRecord, here: dict[str, Any]) -> tuple[bool, list[str]]:
    """Whether a re-run on `here` must reproduce `recorded` bit for bit, and the reasons when not."""
    reasons: list[str] = []
    diff = class_differences(recorded.fingerprint, here)
    if diff is None:
        reasons.append("the record has no fingerprint")
        versions = recorded.versions or {}
        reasons += [f"{k} {versions[k]} vs {here.get(k)}" for k in ("python", "torch", "transformers", "tokenizers",
                                                                      "numpy") if k in versions and versions[k] != here.get(k)]
    else:
        reasons += diff
    code_ok, why = same_code(recorded, here)
    if not code_ok:
        reasons.append(why)
    return not reasons, reasons


def identical(a: RunRecord, b: RunRecord) -> bool:
    """The same final and warm-start success, final metrics and curve (every evaluation of the run)."""
    return (a.final_success == b.final_success and a.warm_start_success == b.warm_start_success
            and a.final_metrics == b.final_metrics and a.curve == b.curve)


@dataclass
class CellCheck:
    """The verdict on one cell: recorded against re-run values, and whether that is a pass."""

    cell: str
    episodes: int | None = None
    recorded_final: float | None = None
    rerun_final: float | None = None
    recorded_warm: float | None = None
    rerun_warm: float | None = None
    z_final: float | None = None
    z_warm: float | None = None
    exact_expected: bool = False
    exact: bool | None = None
    passed: bool = False
    reasons: list[str] = field(default_factory=list)  # why an exact match is not expected
    fingerprint: dict[str, Any] | None = None  # where the re-run ran
    recorded_curve: list[float | None] = field(default_factory=list)  # success at each evaluation
    rerun_curve: list[float | None] = field(default_factory=list)
    error: str | None = None
    wall_time_s: float = 0.0

    @property
    def verdict(self) -> str:
        if self.error:
            return "ERROR"
        if self.exact_expected:
            return "exact match" if self.exact else "FAIL: exact match expected"
        if not self.passed:
            return f"FAIL: beyond {MAX_Z:g} SE"
        return "exact match" if self.exact else f"within {MAX_Z:g} SE"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "verdict": self.verdict}


def check_cell(cell: str, recorded: RunRecord, rerun: RunRecord, here: dict[str, Any]) -> CellCheck:
    """Compare a record with its re-run (whose fingerprint is `here` when the re-run has none)."""
    here = rerun.fingerprint or here
    n1 = int(recorded.protocol.get("eval_episodes") or 0)
    n2 = int(rerun.protocol.get("eval_episodes") or 0)
    expected, reasons = exact_expected(recorded, here)
    processes = [int((r.parallel or {}).get("world_size") or 1) for r in (recorded, rerun)]
    if processes[0] != processes[1]:  # data-parallel ranks sample and reduce differently
        expected, reasons = False, [*reasons, f"trained on {processes[0]} processes, re-run on {processes[1]}"]
    check = CellCheck(
        cell=cell, episodes=n1 or None, recorded_final=recorded.final_success, rerun_final=rerun.final_success,
        recorded_warm=recorded.warm_start_success, rerun_warm=rerun.warm_start_success,
        z_final=success_z(recorded.final_success, rerun.final_success, n1, n2),
        z_warm=success_z(recorded.warm_start_success, rerun.warm_start_success, n1, n2),
        exact_expected=expected, exact=identical(recorded, rerun), reasons=reasons, fingerprint=here,
        recorded_curve=[c.get("success") for c in recorded.curve], rerun_curve=[c.get("success") for c in rerun.curve],
        wall_time_s=rerun.wall_time_s,
    )
    if n1 != n2:
        check.error = f"the re-run evaluated {n2} episodes, the record {n1}"
    elif check.z_final is None:
        check.error = "no final success to compare"
    within = all(z is None or abs(z) <= MAX_Z for z in (check.z_final, check.z_warm))
    check.passed = check.error is None and (bool(check.exact) if expected else within)
    return check
