"""`expert_action_noise`: the planning experts (FrozenLake, Sokoban) take random moves with probability p."""

import pytest

import agentbench_af
from agentbench_af.api.checker import expert_episode
from agentbench_af.api.types import PlanningExpertVariant

ENV_IDS = ["FrozenLake-4x4-v0", "Sokoban-6x6-1box-v0"]
WORDS = ("Up", "Down", "Left", "Right")


def _expert_episode(env_id: str, seed: int, **overrides) -> list[tuple[str, tuple[str, ...]]]:
    """(reasoning, actions) of every turn of one episode played by the expert."""
    _, _, _, turns = expert_episode(agentbench_af.make(env_id, **overrides), seed)
    return [(turn.reasoning, turn.actions) for turn in turns]


def test_hand_worked_draws():
    # p = 1 replaces every move by a vocabulary word; p = 0 returns the moves unchanged (same object)
    variant = PlanningExpertVariant(expert_action_noise=1.0)
    moves = ("Up", "Up", "Up", "Up", "Up", "Up")
    drawn = variant.noisy_moves(moves, ("A", "B"), seed=7, turn=2)
    assert len(drawn) == 6 and set(drawn) <= {"A", "B"}
    assert drawn == variant.noisy_moves(moves, ("A", "B"), seed=7, turn=2)  # deterministic in (seed, turn)
    assert PlanningExpertVariant().noisy_moves(moves, ("A", "B"), seed=7, turn=2) is moves


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_zero_noise_is_the_plain_expert(env_id):
    for seed in range(5):
        assert _expert_episode(env_id, seed) == _expert_episode(env_id, seed, expert_action_noise=0.0)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_noise_changes_some_moves_deterministically_and_keeps_the_words(env_id):
    first_moves_plain, first_moves_noisy = [], []
    for seed in range(60):
        plain = _expert_episode(env_id, seed, expert_reasoning="state")
        noisy = _expert_episode(env_id, seed, expert_reasoning="state", expert_action_noise=0.5)
        assert noisy == _expert_episode(env_id, seed, expert_reasoning="state", expert_action_noise=0.5)
        assert all(set(actions) <= set(WORDS) for _, actions in noisy)
        assert noisy[0][0] == plain[0][0]  # the first state sentence is the same (the moves are not in it)
        first_moves_plain.append(plain[0][1])
        first_moves_noisy.append(noisy[0][1])
    changed = sum(a != b for a, b in zip(first_moves_plain, first_moves_noisy, strict=True))
    # each move is redrawn with p 0.5 and the draw differs with p 3/4: most first turns keep their moves
    assert 5 <= changed <= 50


def test_noise_lowers_expert_success_on_frozenlake():
    def successes(**overrides) -> int:
        env = agentbench_af.make("FrozenLake-4x4-v0", **overrides)
        return sum(expert_episode(env, seed)[0] for seed in range(100))

    assert successes(expert_action_noise=0.5) < successes()


@pytest.mark.parametrize("bad", [-0.1, 1.5])
def test_out_of_range_noise_is_rejected(bad):
    with pytest.raises(ValueError, match="expert_action_noise"):
        agentbench_af.make("FrozenLake-4x4-v0", expert_action_noise=bad)
