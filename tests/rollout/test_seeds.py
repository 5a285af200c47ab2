"""`draw_train_seeds`: distinct, sorted seeds of the training range; the whole range when it is small."""

import numpy as np
import pytest

import agentbench_af
from agentbench_af.rollout.seeds import draw_train_seeds


@pytest.fixture(scope="module")
def env():
    return agentbench_af.make("FrozenLake-4x4-v0")


def test_seeds_are_distinct_sorted_in_range_and_repeat_with_the_generator(env):
    lo, hi = env.variant.train_seeds
    seeds = draw_train_seeds(env, 16, np.random.default_rng(5))
    assert len(seeds) == 16 == len(set(seeds)) and seeds == sorted(seeds)
    assert all(lo <= s < hi for s in seeds)
    assert seeds == draw_train_seeds(env, 16, np.random.default_rng(5))
    assert seeds != draw_train_seeds(env, 16, np.random.default_rng(6))


def test_a_range_no_larger_than_count_gives_all_of_it(env):
    lo, hi = env.variant.train_seeds
    assert draw_train_seeds(env, hi - lo, np.random.default_rng(0)) == list(range(lo, hi))
    assert draw_train_seeds(env, hi - lo + 3, np.random.default_rng(0)) == list(range(lo, hi))
