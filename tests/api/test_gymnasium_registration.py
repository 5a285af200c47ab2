"""Gymnasium's registration: ids resolve right after `import agentbench_af` (or with the module prefix,
without it), and Gymnasium's own `check_env` passes on every registered id."""

from __future__ import annotations

import subprocess
import sys
import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import agentbench_af
from agentbench_af.api import DataUnavailable


def _fresh(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_make_works_right_after_importing_the_package():
    res = _fresh("import gymnasium, agentbench_af\n"
                 "print(type(gymnasium.make('agentbench_af/FrozenLake-4x4-v0').unwrapped).__name__)")
    assert res.returncode == 0 and res.stdout.strip() == "FrozenLakeEnv", res.stderr


def test_module_prefix_imports_the_package():
    res = _fresh("import gymnasium\n"
                 "print(type(gymnasium.make('agentbench_af:agentbench_af/Sokoban-6x6-1box-v0').unwrapped).__name__)")
    assert res.returncode == 0 and res.stdout.strip() == "SokobanEnv", res.stderr


def _param(env_id: str):
    extra = agentbench_af.spec(env_id).extra
    # ids on a heavy engine (TextWorld games: seconds a reset) also run with the long tests
    marks = [getattr(pytest.mark, extra), pytest.mark.slow] if extra in {"textworld", "alfworld"} else []
    return pytest.param(env_id, marks=marks, id=env_id)


@pytest.mark.parametrize("env_id", [_param(i) for i in agentbench_af.list_envs()])
def test_gymnasium_check_env_passes(env_id):
    env = gym.make(f"agentbench_af/{env_id}")
    try:
        env.reset(seed=0)
    except DataUnavailable as exc:
        pytest.skip(f"data absent: {exc}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gym_check_env(env.unwrapped, skip_render_check=False)
    env.close()
    # a Gymnasium warning ("WARN: ...") is a failure, except the frame rate: text has none
    assert [str(w.message) for w in caught if "WARN:" in str(w.message) and "render fps" not in str(w.message)] == []
