"""`expert_action_noise`: the planning experts (FrozenLake, Sokoban) take random moves, the WebShop expert random clicks."""

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


def _webshop_turns(seed: int, **overrides) -> list[tuple[str, tuple[str, ...]]]:
    _, _, _, turns = expert_episode(agentbench_af.make("WebShop-mini-v0", **overrides), seed)
    return [(turn.reasoning, turn.actions) for turn in turns]


def test_webshop_noisy_click_hand_worked():
    from agentbench_af.api import ExpertTurn
    from agentbench_af.environments.webshop.expert import noisy_click

    planned = ExpertTurn("Item B1 fits, so I open it.", ("click[B1]",))
    buttons = ["B1", "B2", "Next >"]
    drawn = noisy_click(planned, buttons, 1.0, seed=7, turn_index=2)  # p = 1: always a drawn button
    (action,) = drawn.actions
    assert action in {f"click[{b}]" for b in buttons}
    assert drawn.reasoning == f"I click {action[6:-1]} on this page."
    assert drawn == noisy_click(planned, buttons, 1.0, seed=7, turn_index=2)  # deterministic in (seed, turn)
    assert noisy_click(planned, buttons, 0.0, seed=7, turn_index=2) is planned
    search = ExpertTurn("I search for it.", ("search[socks]",))
    assert noisy_click(search, buttons, 1.0, seed=7, turn_index=0) is search  # search turns are kept


def test_webshop_noise_keeps_valid_clicks_and_lowers_expert_success():
    plain = [_webshop_turns(seed) for seed in range(100, 160)]
    assert plain == [_webshop_turns(seed, expert_action_noise=0.0) for seed in range(100, 160)]
    noisy_env = agentbench_af.make("WebShop-mini-v0", expert_action_noise=0.3)
    results = [expert_episode(noisy_env, seed) for seed in range(100, 160)]
    assert [[(t.reasoning, t.actions) for t in r[3]] for r in results] == [
        _webshop_turns(seed, expert_action_noise=0.3) for seed in range(100, 160)
    ]
    changed = sum(any(a.endswith("on this page.") for a, _ in turns) for turns in
                  ([(t.reasoning, t.actions) for t in r[3]] for r in results))
    assert changed >= 20  # most episodes have a drawn click at p 0.3 (about 4 click turns each)
    assert all(r[2] <= 10 for r in results)
    assert 0 < sum(r[0] for r in results) < 60  # the expert still succeeds often, not always


def test_webshop_out_of_range_noise_is_rejected():
    with pytest.raises(ValueError, match="expert_action_noise"):
        agentbench_af.make("WebShop-mini-v0", expert_action_noise=2.0)
