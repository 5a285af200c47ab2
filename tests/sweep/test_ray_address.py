"""The Ray options a sweep passes: `--address` reaches `ray.init` (and the connection is closed after),
`--gpus-per-run` becomes every task's `num_gpus`, and neither is accepted without `--backend ray`.
A stand-in `ray` module records the calls and runs each task in this process (train patched), so no
cluster is started; the real local cluster is tested in test_sweep_ray.py."""

from __future__ import annotations

import sys
import types

import yaml
from typer.testing import CliRunner

from agentbench_af.cli import app
from agentbench_af.sweep.ray_backend import RayBackend

runner = CliRunner()


class FakeRay(types.ModuleType):
    """`ray` as the backend uses it: init/shutdown, remote(fn).options(...).remote(task), wait, get."""

    def __init__(self) -> None:
        super().__init__("ray")
        self.inits: list[dict] = []
        self.options: list[dict] = []
        self.shutdowns = 0
        self._up = False

    def is_initialized(self) -> bool:
        return self._up

    exceptions = types.SimpleNamespace(RayError=type("RayError", (Exception,), {}))
    refuse = False

    def init(self, **kwargs) -> None:
        self.inits.append(kwargs)
        if self.refuse:
            raise ConnectionError("Failed to connect to Ray cluster at 10.0.0.9:6379")
        self._up = True

    def shutdown(self) -> None:
        self.shutdowns += 1
        self._up = False

    def remote(self, fn):
        fake = self

        class Remote:
            def options(self, **options):
                fake.options.append(options)
                return types.SimpleNamespace(remote=lambda task: ("ref", fn(task)))

        return Remote()

    def wait(self, refs, num_returns=1):
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref):
        return ref[1]

    def cancel(self, ref, force=False) -> None:
        pass


def _spec(tmp_path, base) -> str:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({"base": base, "out_dir": str(tmp_path / "sw"),
                                    "grid": {"methods": ["grpo", "ppo"], "seeds": [0]}}))
    return str(path)


def test_address_and_gpus_reach_ray(tmp_path, tiny_base, fake_train, monkeypatch):
    fake = FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    res = runner.invoke(app, ["sweep", _spec(tmp_path, tiny_base), "--backend", "ray", "--address", "10.0.0.5:6379",
                              "--gpus-per-run", "0.5", "--quiet"])
    assert res.exit_code == 0, res.output
    assert fake.inits == [{"address": "10.0.0.5:6379", "log_to_driver": False}]
    assert [o["num_gpus"] for o in fake.options] == [0.5, 0.5] and all(o["num_cpus"] == 1 for o in fake.options)
    assert fake.shutdowns == 1 and len(fake_train) == 2
    assert "2 completed" in res.output


def test_without_an_address_ray_address_or_a_local_cluster(monkeypatch):
    fake = FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.setenv("RAY_ADDRESS", "auto")
    with RayBackend(num_cpus=2):
        pass
    monkeypatch.delenv("RAY_ADDRESS")
    with RayBackend(num_cpus=2):
        pass
    assert fake.inits == [{"address": "auto", "log_to_driver": False},
                          {"num_cpus": 2, "include_dashboard": False, "log_to_driver": False}]
    assert fake.shutdowns == 2


def test_ray_options_need_the_ray_backend(tmp_path, tiny_base):
    res = runner.invoke(app, ["sweep", _spec(tmp_path, tiny_base), "--address", "auto"])
    assert res.exit_code == 2 and "--address and --gpus-per-run are for --backend ray" in res.output
    res = runner.invoke(app, ["sweep", _spec(tmp_path, tiny_base), "--backend", "ray", "--gpus-per-run", "-1"])
    assert res.exit_code == 2 and "gpus_per_run: must be >= 0" in res.output


def test_a_cluster_that_cannot_be_joined_is_a_one_line_error(tmp_path, tiny_base, fake_train, monkeypatch):
    fake = FakeRay()
    fake.refuse = True
    monkeypatch.setitem(sys.modules, "ray", fake)
    res = runner.invoke(app, ["sweep", _spec(tmp_path, tiny_base), "--backend", "ray", "--address", "10.0.0.9:6379"])
    assert res.exit_code == 2 and not fake_train
    assert res.output.startswith("error: cannot join the Ray cluster at 10.0.0.9:6379: ")
    assert len(res.output.strip().splitlines()) == 1
