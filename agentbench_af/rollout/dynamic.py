"""Dynamic sampling (DAPO, arXiv 2503.14476, `rollout.dynamic_sampling`): groups whose returns are all equal
carry no group-relative advantage, so they are dropped and more prompts are collected until the step holds
its number of groups with differing returns, or `rollout.dynamic_sampling_max_rounds` collection rounds
have run; the step then trains on the groups it kept.

    got = collect_dynamic(lambda seeds: collect_rollouts(..., seeds, ...), first, refills, max_rounds)

Round 1 plays `first` (the step's usual prompts); each later round plays as many seeds from `refills` as
groups are still missing. Under data parallelism every rank does this on its own share (its share of the
step's prompts, a disjoint slice of the refill seeds: `rollout.seeds.refill_seeds`), with no exchange
between ranks, so ranks may end with different numbers of groups; loss denominators are global, so the
update still weighs every kept token alike. A share that keeps no group at all trains on its first round,
as without dynamic sampling (its group-relative advantages are 0). DAPO draws a whole batch each round
and cuts the last one to size; drawing the missing number is this project's choice (no surplus to cut).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from agentbench_af.rollout.types import Trajectory

EQUAL_RETURNS = 1e-6  # a group whose returns span no more than this counts as all equal (as health/zero_adv_groups)


@dataclass(frozen=True)
class DynamicCollection:
    """What a step trains on and how it was drawn."""

    trajs: list[Trajectory]  # the kept groups' trajectories, groups numbered 0.. in order of collection
    drawn: int  # groups collected over every round
    kept: int  # groups with differing returns among them (the step trains on these)
    rounds: int  # collection rounds run
    played: int  # trajectories collected over every round
    successes: int  # successful ones among them


def varied(group: Sequence[Trajectory]) -> bool:
    """Whether the group's returns differ (by more than `EQUAL_RETURNS`)."""
    returns = [t.total_reward for t in group]
    return max(returns) - min(returns) > EQUAL_RETURNS


def by_group(trajs: Sequence[Trajectory]) -> list[list[Trajectory]]:
    """One collection's trajectories split by their `group` (0..), in order."""
    groups: dict[int, list[Trajectory]] = {}
    for t in trajs:
        groups.setdefault(t.group, []).append(t)
    return [groups[g] for g in sorted(groups)]


def collect_dynamic(collect: Callable[[list[int]], list[Trajectory]], first: Sequence[int], refills: Sequence[int],
                    max_rounds: int) -> DynamicCollection:
    """Collect `first`, then seeds from `refills` in order, until len(first) groups with differing returns
    are kept or `max_rounds` rounds have run (see the module docstring)."""
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be >= 1, got {max_rounds}")
    target, queue = len(first), list(refills)
    kept: list[list[Trajectory]] = []
    first_round: list[list[Trajectory]] = []
    drawn, rounds, successes, played = 0, 0, 0, 0
    seeds = list(first)
    while seeds and rounds < max_rounds:
        groups = by_group(collect(seeds))
        rounds += 1
        drawn += len(groups)
        successes += sum(t.success for g in groups for t in g)
        played += sum(len(g) for g in groups)
        first_round = first_round or groups
        kept += [g for g in groups if varied(g)]
        missing = target - len(kept)
        if missing <= 0:
            break
        seeds, queue = queue[:missing], queue[missing:]
    chosen = kept or first_round
    trajs = [replace(t, group=i) for i, g in enumerate(chosen) for t in g]
    return DynamicCollection(trajs, drawn, len(kept), rounds, played, successes)
