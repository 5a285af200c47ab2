"""The Ray backend on a local cluster: a two-run toy sweep. Runs in CI (the ray extra is installed there)."""

import importlib.util
import os

import pytest

from agentbench_af.config import from_dict
from agentbench_af.results.record import RunRecord
from agentbench_af.sweep import SweepSpec, run_sweep

pytestmark = pytest.mark.ray


@pytest.fixture
def ray_available():
    if importlib.util.find_spec("ray") is None:
        if os.environ.get("CI"):
            pytest.fail("ray is not installed but CI is set: install the ray extra (pip install -e '.[ray]')")
        pytest.skip("ray is not installed (pip install -e '.[ray]')")


def test_ray_two_run_sweep_on_a_local_cluster(tmp_path, tiny_base, monkeypatch, ray_available):
    import ray

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    spec = from_dict(SweepSpec, {"base": tiny_base, "out_dir": str(tmp_path / "sw"),
                                 "grid": {"methods": ["grpo", "rloo"], "seeds": [0]}})
    out = run_sweep(spec, backend="ray", workers=2, show_progress=False)
    assert [o.status for o in out] == ["completed", "completed"], [o.error for o in out]
    records = [RunRecord.load(o.run_dir) for o in out]
    assert [r.method for r in records] == ["grpo", "rloo"]
    assert all(r.status == "completed" and r.final_success is not None for r in records)
    assert not ray.is_initialized()  # the cluster this sweep started is shut down
    again = run_sweep(spec, backend="ray", workers=2, show_progress=False)
    assert [o.status for o in again] == ["skipped", "skipped"]
