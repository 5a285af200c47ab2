"""Sokoban: moves and pushes on hand-built rooms, each reward rule, rendering, the solver, the generator, the expert."""

from __future__ import annotations

import dataclasses
from collections import deque

import pytest

import agentbench_af
from agentbench_af.api.checker import expert_episode
from agentbench_af.environments.sokoban.generator import generate_puzzle
from agentbench_af.environments.sokoban.room import parse_room, render
from agentbench_af.environments.sokoban.solver import apply_actions, solve
from agentbench_af.environments.sokoban.variants import VARIANTS

IDS = list(VARIANTS)
UP, DOWN, LEFT, RIGHT = range(4)

CORRIDOR = """
# # # # # #
# _ _ _ _ #
# P X _ O #
# _ _ _ _ #
# _ _ _ _ #
# # # # # #
"""
DETOUR = """
# # # # # #
# _ _ _ _ #
# _ X _ _ #
# P _ _ _ #
# # # O # #
# # # # # #
"""


def _room(text: str, env_id: str = "Sokoban-6x6-1box-v0"):
    env = agentbench_af.make(env_id)
    env.reset(seed=0)
    env.set_room(text)
    return env


def _turn(env, *actions: str):
    return env.step(f"<think>test</think><answer>{' || '.join(actions)}</answer>")


def _rows(text: str) -> str:
    return "\n".join(line.strip() for line in text.strip().splitlines())


def _bfs_length(layout, player, boxes) -> int | None:
    """Plain breadth-first search (no heuristic, no pruning): the optimal solution length, for comparison."""
    start = (player, tuple(sorted(boxes)))
    seen, queue = {start}, deque([(start, 0)])
    while queue:
        (p, bx), g = queue.popleft()
        if bx == layout.targets:
            return g
        for a in range(4):
            nxt = apply_actions(layout, p, bx, (a,))
            if nxt not in seen:
                seen.add(nxt)
                queue.append((nxt, g + 1))
    return None


# --------------------------------------------------------------------------- moves and rewards
def test_plain_move_costs_a_step_and_is_effective():
    env = _room(CORRIDOR)
    _, reward, terminated, truncated, info = _turn(env, "Up")
    assert reward == pytest.approx(-0.1) and info["action_is_effective"] and info["action_is_valid"]
    assert not terminated and not truncated
    assert env.render().splitlines()[1] == "# P _ _ _ #"


def test_wall_and_blocked_box_are_valid_but_not_effective():
    env = _room(CORRIDOR)
    before = env.render()
    _, reward, _, _, info = _turn(env, "Left")  # into the wall
    assert info["action_is_valid"] and not info["action_is_effective"] and reward == pytest.approx(-0.1)
    assert env.render() == before
    env.set_room("# # # # # #\n# _ _ _ _ #\n# _ _ P X #\n# _ _ _ O #\n# _ _ _ _ #\n# # # # # #")
    before = env.render()
    _, reward, _, _, info = _turn(env, "Right")  # box against the wall
    assert not info["action_is_effective"] and reward == pytest.approx(-0.1) and env.render() == before
    env.set_room("# # # # # #\n# _ _ _ _ #\n# P X X _ #\n# _ _ _ O #\n# _ _ _ O #\n# # # # # #")
    before = env.render()
    _, _, _, _, info = _turn(env, "Right")  # box against another box
    assert not info["action_is_effective"] and env.render() == before


def test_push_moves_box_and_player():
    env = _room(CORRIDOR)
    _, reward, terminated, _, info = _turn(env, "Right")
    assert reward == pytest.approx(-0.1) and info["action_is_effective"] and not terminated
    assert env.render().splitlines()[2] == "# _ P X O #"


def test_push_onto_last_target_gives_plus_one_and_plus_ten_and_ends():
    env = _room(CORRIDOR)
    _, reward, terminated, truncated, info = _turn(env, "right", "  RIGHT ")
    assert reward == pytest.approx(2 * -0.1 + 1 + 10)
    assert terminated and not truncated and info["success"] and env.is_success
    assert env.render().splitlines()[2] == "# _ _ P √ #"


def test_push_off_target_costs_one_and_onto_first_of_two_gives_one():
    env = _room("# # # # # #\n# _ _ _ _ #\n# P √ _ O #\n# _ X _ _ #\n# _ _ _ _ #\n# # # # # #")
    _, reward, terminated, _, _ = _turn(env, "Right")  # off a target onto floor
    assert reward == pytest.approx(-0.1 - 1) and not terminated
    assert env.render().splitlines()[2] == "# _ S X O #"  # the player now stands on the target
    _, reward, terminated, _, _ = _turn(env, "Right")  # onto a target: one of two boxes placed
    assert reward == pytest.approx(-0.1 + 1) and not terminated and not env.is_success


def test_push_from_target_to_target_nets_zero():
    env = _room("# # # # # #\n# _ _ _ _ #\n# P √ O _ #\n# _ _ _ _ #\n# _ _ _ X #\n# # # # # #")
    _, reward, terminated, _, _ = _turn(env, "Right")
    assert reward == pytest.approx(-0.1) and not terminated


def test_step_reward_override_prices_every_valid_action():
    env = agentbench_af.make("Sokoban-6x6-1box-v0", step_reward=0.0)
    env.reset(seed=0)
    env.set_room(CORRIDOR)
    _, reward, *_ = _turn(env, "Left")  # into the wall: valid, not effective
    assert reward == 0.0
    _, reward, terminated, *_ = _turn(env, "Right", "Right")  # push, then push onto the target
    assert reward == pytest.approx(1 + 10) and terminated
    env = _room(CORRIDOR, "Sokoban-6x6-1box-v0")
    assert env.variant.step_reward == pytest.approx(-0.1)  # the registered default is unchanged
    with pytest.raises(ValueError, match="step_reward"):
        agentbench_af.make("Sokoban-6x6-1box-v0", step_reward=float("nan"))


def test_deadlock_is_not_terminal_and_the_episode_truncates():
    env = _room("# # # # # #\n# _ _ _ _ #\n# _ _ _ _ #\n# _ _ P X #\n# O _ _ _ #\n# # # # # #")
    for k in range(1, 6):
        _, _, terminated, truncated, _ = _turn(env, "Up", "Down")
        assert not terminated and truncated == (k == 5)


def test_invalid_action_changes_nothing_and_valid_prefix_applies():
    env = _room(CORRIDOR)
    before, left = env.render(), env.actions_left
    obs, reward, terminated, _, info = _turn(env, "Jump")
    assert not info["action_is_valid"] and "Jump" in info["invalid_reason"] and not terminated
    assert env.render() == before and env.actions_left == left and reward == pytest.approx(-0.1)
    assert obs.startswith("Invalid:")
    _, reward, _, _, info = _turn(env, "Right", "Fly")
    assert not info["action_is_valid"] and info["num_actions"] == 1
    assert reward == pytest.approx(-0.1 - 0.1) and env.render().splitlines()[2] == "# _ P X O #"


# --------------------------------------------------------------------------- rendering
def test_render_round_trips_every_symbol():
    text = "# # # # # #\n# S √ _ _ #\n# _ X _ _ #\n# _ _ _ _ #\n# _ _ _ _ #\n# # # # # #"
    layout, player, boxes = parse_room(text)
    assert render(layout, player, boxes) == text
    assert parse_room(text.replace(" ", "")) == (layout, player, boxes)
    env = _room(text)
    assert env.render() == text and set("#_OX√PS") >= set(env.render().replace(" ", "").replace("\n", ""))


def test_parse_room_rejects_bad_rooms():
    for bad in (
        "# # #\n# P #\n# # #",
        "# # # #\n# P X #\n# _ O _\n# # # #",
        "# # # #\n# P X #\n# _ _ #\n# # # #",
    ):
        with pytest.raises(ValueError):
            parse_room(bad)


def test_reset_observation_is_the_room_and_deterministic():
    env = agentbench_af.make("Sokoban-6x6-1box-v0")
    obs, info = env.reset(seed=7)
    assert obs == env.render() and len(obs.splitlines()) == 6 and not info["success"]
    assert env.reset(seed=7)[0] == obs
    assert "√" in env.rules(env.variant) and "Up, Down, Left, Right" in env.rules(env.variant)


# --------------------------------------------------------------------------- solver
def test_solver_is_optimal_on_hand_made_rooms():
    layout, player, boxes = parse_room(CORRIDOR)
    assert solve(layout, player, boxes) == (RIGHT, RIGHT)
    layout, player, boxes = parse_room(DETOUR)
    assert solve(layout, player, boxes) == (UP, RIGHT, UP, RIGHT, DOWN, DOWN)
    assert solve(layout, player, boxes, max_actions=5) is None
    assert solve(layout, player, layout.targets) == ()


def test_solver_rejects_dead_rooms():
    layout, player, boxes = parse_room(
        "# # # # # #\n# X _ _ _ #\n# _ P _ _ #\n# _ _ _ O #\n# _ _ _ _ #\n# # # # # #"
    )
    assert boxes[0] not in layout.push_distance  # a box in a corner off target is dead
    assert solve(layout, player, boxes) is None


@pytest.mark.parametrize("env_id", IDS)
def test_solver_length_equals_plain_bfs_on_generated_rooms(env_id):
    variant = VARIANTS[env_id][0]
    for seed in range(8):
        p = generate_puzzle(variant, seed)
        assert len(p.solution) == _bfs_length(p.layout, p.player, p.boxes)


# --------------------------------------------------------------------------- generator
@pytest.mark.parametrize("env_id", IDS)
def test_generator_is_deterministic_and_rooms_are_solvable_within_budget(env_id):
    variant = VARIANTS[env_id][0]
    puzzles = [generate_puzzle(variant, s) for s in range(40)]
    assert puzzles[:5] == [generate_puzzle(variant, s) for s in range(5)]
    assert len({(p.layout, p.player, p.boxes) for p in puzzles}) >= 38
    for p in puzzles:
        assert len(p.boxes) == variant.num_boxes and p.boxes != p.layout.targets
        assert variant.min_solution <= len(p.solution) <= variant.max_actions_per_episode
        assert apply_actions(p.layout, p.player, p.boxes, p.solution)[1] == p.layout.targets
        n = variant.size
        border = {i for i in range(n * n) if i // n in (0, n - 1) or i % n in (0, n - 1)}
        assert not border & p.layout.floor


def test_generator_honours_its_knobs():
    v = dataclasses.replace(VARIANTS["Sokoban-6x6-1box-v0"][0], min_solution=6)
    assert all(len(generate_puzzle(v, s).solution) >= 6 for s in range(10))


# --------------------------------------------------------------------------- expert
@pytest.mark.parametrize("env_id", IDS)
def test_expert_solves_every_seed(env_id):
    env = agentbench_af.make(env_id)
    lo = env.variant.eval_seeds[0]
    for seed in range(lo, lo + 50):
        success, total, _, turns = expert_episode(env, seed)
        assert success, f"seed {seed}"
        assert total > 0 and all(1 <= len(t.actions) <= env.variant.max_actions_per_turn for t in turns)
    assert "row" in turns[0].reasoning and "optimal solution needs" in turns[0].reasoning


def test_expert_replans_off_the_plan_and_falls_back_when_stuck():
    env = _room(DETOUR)
    assert env.expert_turn().actions == ("Up", "Right")
    _turn(env, "Right")  # off the optimal plan: 8 actions left, the optimum from here is 7
    assert "needs 7 more moves" in env.expert_turn().reasoning
    terminated = False
    while not terminated:
        *_, terminated, truncated, info = _turn(env, *env.expert_turn().actions)
        assert info["action_is_valid"] and not truncated
    assert env.is_success
    env.set_room("# # # # # #\n# X _ _ _ #\n# _ P _ _ #\n# _ _ _ O #\n# _ _ _ _ #\n# # # # # #")
    turn = env.expert_turn()
    assert turn.actions == ("Up",) and "No solution" in turn.reasoning


def test_state_reasoning_stops_before_the_moves_it_gives():
    plan = _room(CORRIDOR).expert_turn()
    state = agentbench_af.make("Sokoban-6x6-1box-v0", expert_reasoning="state")
    state.reset(seed=0)
    state.set_room(CORRIDOR)
    turn = state.expert_turn()
    assert plan.reasoning.endswith("needs 2 more moves, so I go Right then Right.")
    assert turn.reasoning == plan.reasoning.split(", so I go")[0] + "."
    assert turn.actions == plan.actions == ("Right", "Right")
    state.set_room("# # # # # #\n# X _ _ _ #\n# _ P _ _ #\n# _ _ _ O #\n# _ _ _ _ #\n# # # # # #")
    stuck = state.expert_turn()
    assert stuck.reasoning.endswith("actions left.") and stuck.actions == ("Up",)
    with pytest.raises(ValueError, match="expert_reasoning"):
        agentbench_af.make("Sokoban-6x6-1box-v0", expert_reasoning="moves")
