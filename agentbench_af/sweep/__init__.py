"""Sweeps: a grid of training runs on a local process pool or a Ray cluster (see docs/sweeps.md)."""

from agentbench_af.sweep.runner import PlannedRun, RunOutcome, SweepError, SweepPlan, plan_sweep, run_sweep
from agentbench_af.sweep.spec import GridSpec, SweepSpec, expand, load_sweep_spec

__all__ = [
    "GridSpec", "PlannedRun", "RunOutcome", "SweepError", "SweepPlan", "SweepSpec", "expand", "load_sweep_spec",
    "plan_sweep", "run_sweep",
]
