"""The contract over every registered id: the full checker, and hypothesis properties on arbitrary text.

Ids whose environment needs an optional extra carry that extra's marker (`textworld`, `alfworld`):
deselect them with `-m "not textworld and not alfworld"`; run without the package, they fail with
the registry's install hint rather than skipping.
"""

from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentbench_af
from agentbench_af.api.checker import action_vocabulary, check_env

FRAGMENTS = ("<think>", "</think>", "<answer>", "</answer>", "||", " ", "\n", "\x00", "é", "Fly", "")
PROPERTY_SETTINGS = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _param(env_id: str):
    extra = agentbench_af.spec(env_id).extra
    marks = [getattr(pytest.mark, extra)] if extra in {"textworld", "alfworld"} else []
    return pytest.param(env_id, marks=marks, id=env_id)


ENV_IDS = [_param(i) for i in agentbench_af.list_envs()]


@cache
def _env(env_id: str):
    return agentbench_af.make(env_id)


@cache
def _seeds(env_id: str) -> tuple[int, ...]:
    lo = _env(env_id).variant.train_seeds[0]
    return (lo, lo + 1, lo + 2)


@cache
def _vocab(env_id: str) -> tuple[str, ...]:
    return action_vocabulary(agentbench_af.make(env_id), _seeds(env_id)[:2])  # its own instance: it plays


def _response(data: st.DataObject, env_id: str) -> str:
    """Arbitrary text, or tag soup mixing real action words, tags, separators and noise."""
    pieces = st.sampled_from(FRAGMENTS + _vocab(env_id)) | st.text(max_size=6)
    soup = st.lists(pieces, max_size=12).map("".join)
    return data.draw(st.text(max_size=200) | soup, label="response")


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_passes(env_id):
    report = check_env(env_id)
    assert {"reset_deterministic", "expert_valid", "replay", "malformed", "turn_limit", "step_types"} <= set(
        report.passed
    )
    assert report.n_malformed == 1000


@pytest.mark.parametrize("env_id", ENV_IDS)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_arbitrary_text_never_raises_and_invalid_turns_change_nothing(env_id, data):
    env = _env(env_id)
    env.reset(seed=data.draw(st.sampled_from(_seeds(env_id)), label="seed"))
    text = _response(data, env_id)
    before, left = env.render(), env.actions_left
    obs, reward, terminated, truncated, info = env.step(text)
    assert isinstance(obs, str) and isinstance(reward, float)
    assert env.actions_left == left - info["num_actions"]
    if not info["action_is_valid"]:
        assert info["invalid_reason"]
        if info["num_actions"] == 0:  # nothing applied: the state is exactly as before
            assert env.render() == before and not terminated
            assert reward == env.variant.format_penalty


@pytest.mark.parametrize("env_id", ENV_IDS)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_invalid_turn_mid_episode_changes_nothing(env_id, data):
    """After a few expert turns, a response with no usable answer leaves render() as it was."""
    env = _env(env_id)
    env.reset(seed=data.draw(st.sampled_from(_seeds(env_id)), label="seed"))
    for _ in range(data.draw(st.integers(0, 2), label="expert turns")):
        t = env.expert_turn()
        *_, terminated, truncated, _ = env.step(f"<answer>{' || '.join(t.actions)}</answer>")
        if terminated or truncated:
            return
    noise = data.draw(st.text(max_size=80).filter(lambda s: "<answer>" not in s), label="noise")
    before = env.render()
    _, reward, terminated, _, info = env.step(
        noise + data.draw(st.sampled_from(("", "</answer>", "<answer>")), label="tail")
    )
    assert not info["action_is_valid"] and info["num_actions"] == 0 and not terminated
    assert env.render() == before and reward == env.variant.format_penalty
