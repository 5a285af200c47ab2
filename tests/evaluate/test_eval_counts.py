"""Evaluation counting exists once: `EvalCounts` of a set of episodes, `+` over disjoint sets (a data-parallel
run's ranks), `result()` for the rates; `summarise` is the counts of one set. Worked by hand."""

import pytest

from agentbench_af.evaluate.evaluate import EvalCounts, summarise
from agentbench_af.rollout.types import Trajectory, TurnRecord


def _turn(reward: float, valid: bool, effective: bool) -> TurnRecord:
    return TurnRecord("", [], [], [], [], [], "", reward=reward, valid=valid, effective=effective)


def _episode(success: bool, *turns: tuple[float, bool, bool]) -> Trajectory:
    return Trajectory("FrozenLake-4x4-v0", 0, 0, "", turns=[_turn(*t) for t in turns], success=success)


EPISODES = [
    _episode(True, (0.0, True, True), (1.0, True, True)),  # reward 1, 2 valid, 2 effective
    _episode(False, (-0.5, False, False)),  # reward -0.5, 0 valid
    _episode(False, (0.0, True, False), (0.0, True, True), (0.25, True, False)),  # reward 0.25, 3 valid, 1 effective
]


def test_counts_of_three_episodes():
    counts = EvalCounts.of(EPISODES)
    assert counts == EvalCounts(episodes=3, successes=1, reward=0.75, turns=6, valid=5, effective=3)
    result = counts.result()
    assert result.success == pytest.approx(1 / 3) and result.mean_reward == pytest.approx(0.25)
    assert result.valid_rate == pytest.approx(5 / 6) and result.effective_rate == pytest.approx(3 / 6)
    assert result.mean_turns == pytest.approx(2.0) and result.episodes == 3
    assert summarise(EPISODES) == result


def test_counts_of_a_split_add_up_to_the_whole():
    # two "ranks": the first episode, then the other two (and an empty share, as a rank with no seeds has)
    parts = [EvalCounts.of(EPISODES[:1]), EvalCounts.of(EPISODES[1:]), EvalCounts.of([])]
    assert sum(parts, EvalCounts()) == EvalCounts.of(EPISODES)
    assert sum(parts, EvalCounts()).result() == summarise(EPISODES)


def test_no_episodes_give_zero_rates():
    assert summarise([]).to_dict() == {"success": 0.0, "mean_reward": 0.0, "valid_rate": 0.0, "effective_rate": 0.0,
                                       "mean_turns": 0.0, "episodes": 0}
