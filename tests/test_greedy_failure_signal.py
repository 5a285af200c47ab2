"""`benchmarks/greedy_failure_signal.py`: the groups are sorted by the greedy outcome of their seed and counted
by hand-worked examples."""

from __future__ import annotations

import bench_scripts  # noqa: F401  (first: it puts benchmarks/ on sys.path)
import greedy_failure_signal as gfs
import pytest


def test_signal_rows_by_hand():
    greedy = {1: False, 2: False, 3: True, 4: True, 5: False}
    samples = {
        1: [False, False, False, False],  # greedy failed, all failed: no signal
        2: [True, False, False, False],  # greedy failed, mixed: a signal
        3: [True, True, True, True],  # greedy solved, all solved
        4: [True, False, True, True],  # greedy solved, mixed
    }  # seed 5 has no group and is left out
    failed, solved = gfs.signal_rows(greedy, samples)
    assert (failed.label, failed.groups, failed.mixed, failed.all_failed, failed.all_solved) == (
        "greedy failed", 2, 1, 1, 0)
    assert failed.sampled_success == pytest.approx(1 / 8)
    assert (solved.label, solved.groups, solved.mixed, solved.all_failed, solved.all_solved) == (
        "greedy solved", 2, 1, 0, 1)
    assert solved.sampled_success == pytest.approx(7 / 8)


def test_every_failed_seed_and_as_many_solved_ones_are_sampled():
    greedy = {10: True, 11: False, 12: True, 13: True, 14: False}
    assert gfs.groups_to_sample(greedy) == [11, 14, 10, 12]
    assert gfs.groups_to_sample({1: True, 2: True}) == []


def test_no_groups_give_empty_rows():
    failed, solved = gfs.signal_rows({1: False}, {})
    assert (failed.groups, failed.sampled_success, solved.groups) == (0, 0.0, 0)
