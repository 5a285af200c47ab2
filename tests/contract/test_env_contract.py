"""The contract over every registered id: the full checker, and hypothesis properties on arbitrary text.

Ids whose environment needs an optional extra carry that extra's marker (`textworld`, `alfworld`):
deselect them with `-m "not textworld and not alfworld"`; run without the package, they fail with
the registry's install hint rather than skipping. Ids on such a heavy engine (a reset costs ~0.5 s)
get two checker seeds and fewer hypothesis examples. Ids that read a data set only a user can supply
(official ALFWorld files) are skipped, with the reason, when it is absent.
"""

from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentbench_af
from agentbench_af.api.checker import check_env

FRAGMENTS = ("<think>", "</think>", "<answer>", "</answer>", "||", " ", "\n", "\x00", "é", "Fly", "")
#: hypothesis examples per id and property; ids on a heavy engine (an extra: a reset costs ~0.5 s) get fewer
EXAMPLES, HEAVY_EXAMPLES = 25, 6


def _heavy(env_id: str) -> bool:
    return agentbench_af.spec(env_id).extra is not None


def _settings(env_id: str) -> settings:
    return settings(
        max_examples=HEAVY_EXAMPLES if _heavy(env_id) else EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def _missing_user_data(env_id: str) -> str | None:
    """Why an id cannot run here for lack of a user-supplied data set (None: nothing missing)."""
    variant = agentbench_af.spec(env_id).variant
    if env_id.startswith("ALFWorld") and getattr(variant, "source", "") == "official":
        from agentbench_af.environments.alfworld.official import official_root  # no alfworld import

        if not official_root().is_dir():
            return f"needs the official ALFWorld task files at {official_root()} (set ALFWORLD_DATA)"
    return None


def _param(env_id: str):
    extra = agentbench_af.spec(env_id).extra
    marks = [getattr(pytest.mark, extra)] if extra in {"textworld", "alfworld"} else []
    missing = _missing_user_data(env_id)
    if missing:
        marks.append(pytest.mark.skip(reason=missing))
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
    """Real action strings: admissible actions and the expert's first turn on two seeds."""
    env, words = _env(env_id), set()
    for s in _seeds(env_id)[:2]:
        env.reset(seed=s)
        words.update(env.admissible_actions() or ())
        words.update(env.expert_turn().actions)
    return tuple(sorted(words))


def _response(data: st.DataObject, env_id: str) -> str:
    """Arbitrary text, or tag soup mixing real action words, tags, separators and noise."""
    pieces = st.sampled_from(FRAGMENTS + _vocab(env_id)) | st.text(max_size=6)
    soup = st.lists(pieces, max_size=12).map("".join)
    return data.draw(st.text(max_size=200) | soup, label="response")


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_passes(env_id):
    v = agentbench_af.spec(env_id).variant
    seeds = (v.train_seeds[0], v.eval_seeds[0]) if _heavy(env_id) else None
    report = check_env(env_id, seeds=seeds)
    assert {"reset_deterministic", "expert_valid", "replay", "malformed", "turn_limit", "step_types"} <= set(
        report.passed
    )
    assert report.n_malformed == 1000


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_arbitrary_text_never_raises_and_invalid_turns_change_nothing(env_id):
    env, _ = _env(env_id), _vocab(env_id)  # the vocabulary first: building it plays on `env`

    @_settings(env_id)
    @given(data=st.data())
    def prop(data):
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

    prop()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_invalid_turn_mid_episode_changes_nothing(env_id):
    """After a few expert turns, a response with no usable answer leaves render() as it was."""
    env, _ = _env(env_id), _vocab(env_id)  # the vocabulary first: building it plays on `env`

    @_settings(env_id)
    @given(data=st.data())
    def prop(data):
        env.reset(seed=data.draw(st.sampled_from(_seeds(env_id)), label="seed"))
        for _ in range(data.draw(st.integers(0, 2), label="expert turns")):
            t = env.expert_turn()
            *_, terminated, truncated, _ = env.step(f"<answer>{' || '.join(t.actions)}</answer>")
            if terminated or truncated:
                return
        noise = data.draw(st.text(max_size=80).filter(lambda s: "<answer>" not in s), label="noise")
        tail = data.draw(st.sampled_from(("", "</answer>", "<answer>")), label="tail")
        before = env.render()
        _, reward, terminated, _, info = env.step(noise + tail)
        assert not info["action_is_valid"] and info["num_actions"] == 0 and not terminated
        assert env.render() == before and reward == env.variant.format_penalty

    prop()
