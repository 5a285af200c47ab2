"""FrozenLake's expert sentence: `expert_reasoning` plan (names the moves) vs state (stops before them)."""

import pytest

import agentbench_af


def _expert(**overrides):
    env = agentbench_af.make("FrozenLake-4x4-v0", **overrides)
    env.reset(seed=3)
    return env.expert_turn()


def test_state_reasoning_is_the_plan_sentence_without_its_moves():
    plan, state = _expert(), _expert(expert_reasoning="state")
    assert plan.actions == state.actions and len(plan.actions) >= 1
    assert plan.reasoning.endswith(f"so I go {' then '.join(plan.actions)}.")
    assert state.reasoning == plan.reasoning.split(", so I go")[0] + "."
    assert not any(move in state.reasoning for move in ("Up", "Down", "Left", "Right"))


def test_unknown_expert_reasoning_is_rejected():
    with pytest.raises(ValueError, match="expert_reasoning"):
        agentbench_af.make("FrozenLake-4x4-v0", expert_reasoning="moves")
