"""Dynamic sampling (`rollout.dynamic_sampling`, DAPO arXiv 2503.14476): groups with all-equal returns are
dropped and refilled from further seeds, worked by hand with a collector whose returns are set per seed;
the refill seeds are disjoint per rank and repeat with the step's generator; recipes merge into configs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import agentbench_af
from agentbench_af.config import ConfigError, merge_mappings, read_config_mapping
from agentbench_af.rollout.dynamic import collect_dynamic, varied
from agentbench_af.rollout.seeds import draw_train_seeds, refill_seeds
from agentbench_af.rollout.types import RolloutConfig, Trajectory, TurnRecord
from agentbench_af.train.config import train_config_from_dict

ROOT = Path(__file__).resolve().parents[2]
# the two returns of each seed's group of two rollouts; equal pairs carry no group-relative advantage
RETURNS = {1: (1.0, 1.0), 2: (0.0, 1.0), 3: (0.0, 0.0), 4: (0.5, 0.5), 5: (1.0, 0.0), 6: (0.2, 0.7), 7: (0.0, 1.0)}


def _collector(calls: list[list[int]]):
    def collect(seeds: list[int]) -> list[Trajectory]:
        calls.append(list(seeds))
        out = []
        for group, seed in enumerate(seeds):
            for r in RETURNS[seed]:
                turn = TurnRecord("", [], [], [], [], [], "", reward=r)
                out.append(Trajectory("env", seed, group, "", [turn], success=r == 1.0))
        return out
    return collect


def test_groups_with_equal_returns_are_refilled_until_the_step_is_full():
    calls: list[list[int]] = []
    got = collect_dynamic(_collector(calls), [1, 2, 3], [4, 5, 6, 7], max_rounds=3)
    # round 1 plays 1, 2, 3 and keeps 2 (1 and 3 have equal returns): 2 groups missing
    # round 2 plays the next two refills, 4 (equal: dropped) and 5 (kept): 1 missing
    # round 3 plays 6 (kept): 3 groups kept of 6 drawn, and 7 is never played
    assert calls == [[1, 2, 3], [4, 5], [6]]
    assert (got.drawn, got.kept, got.rounds) == (6, 3, 3)
    assert [(t.seed, t.group) for t in got.trajs] == [(2, 0), (2, 0), (5, 1), (5, 1), (6, 2), (6, 2)]
    # successes (return 1.0) over the 12 trajectories drawn: seed 1 twice, 2, 5 once each
    assert (got.played, got.successes) == (12, 4)


def test_the_round_cap_trains_on_what_was_kept():
    calls: list[list[int]] = []
    got = collect_dynamic(_collector(calls), [1, 2, 3], [4, 5, 6, 7], max_rounds=2)
    assert calls == [[1, 2, 3], [4, 5]]
    assert (got.drawn, got.kept, got.rounds) == (5, 2, 2)
    assert [t.seed for t in got.trajs] == [2, 2, 5, 5]


def test_a_full_first_round_draws_nothing_more_and_no_kept_group_falls_back_to_the_first_round():
    calls: list[list[int]] = []
    got = collect_dynamic(_collector(calls), [2, 5], [6, 7], max_rounds=3)
    assert calls == [[2, 5]] and (got.drawn, got.kept, got.rounds) == (2, 2, 1)
    calls.clear()
    got = collect_dynamic(_collector(calls), [1, 3], [4], max_rounds=3)
    # round 2 plays the only refill, 4, then the queue is empty: nothing kept, the first round's groups return
    assert calls == [[1, 3], [4]] and (got.drawn, got.kept, got.rounds) == (3, 0, 2)
    assert [(t.seed, t.group) for t in got.trajs] == [(1, 0), (1, 0), (3, 1), (3, 1)]


def test_returns_within_a_millionth_count_as_equal():
    def group(*returns):
        return [Trajectory("env", 0, 0, "", [TurnRecord("", [], [], [], [], [], "", reward=r)]) for r in returns]
    assert not varied(group(0.3, 0.1 + 0.2))  # 0.30000000000000004
    assert varied(group(0.3, 0.300002))


def test_refill_seeds_are_disjoint_per_rank_leave_out_the_step_seeds_and_repeat():
    env = agentbench_af.make("FrozenLake-4x4-v0")
    taken = draw_train_seeds(env, 8, np.random.default_rng(1))
    whole = refill_seeds(env, taken, 16, np.random.default_rng(2))
    assert len(whole) == 16 == len(set(whole)) and not set(whole) & set(taken)
    assert whole == refill_seeds(env, taken, 16, np.random.default_rng(2))
    ranks = [refill_seeds(env, taken, 16, np.random.default_rng(2), r, 2) for r in range(2)]
    assert ranks == [whole[0::2], whole[1::2]]


def test_the_dapo_recipe_merges_into_a_config_and_the_settings_are_checked(tmp_path):
    cfg = train_config_from_dict(read_config_mapping(ROOT / "baselines/cpu/base.yaml", ["rl.steps=2"],
                                                     [ROOT / "baselines/recipes/dapo.yaml"]))
    assert cfg.method == "grpo" and cfg.rl.steps == 2 and cfg.rl.minibatches == 2  # the base's, kept
    assert (cfg.loss.clip_eps_high, cfg.loss.agg, cfg.rollout.dynamic_sampling) == (0.28, "token-mean", True)
    assert cfg.rollout.group_size == 8 and cfg.rollout.max_new_tokens == 64  # merged section by section
    assert merge_mappings({"a": {"b": 1, "c": 2}, "d": 3}, {"a": {"b": 5}, "d": {"e": 1}}) == {"a": {"b": 5, "c": 2},
                                                                                                "d": {"e": 1}}
    with pytest.raises(ConfigError, match="recipe.yaml not found|config file not found"):
        read_config_mapping(ROOT / "baselines/cpu/base.yaml", [], [tmp_path / "recipe.yaml"])
    with pytest.raises(ValueError, match="rollout.dynamic_sampling_max_rounds must be an integer >= 1"):
        RolloutConfig(dynamic_sampling=True, dynamic_sampling_max_rounds=0)
    with pytest.raises(ConfigError, match="set rollout.group_size >= 2"):
        train_config_from_dict({"rollout": {"dynamic_sampling": True, "group_size": 1}, "method": "ppo"})
