"""Do RL's groups carry a signal on the episodes the greedy policy fails?

Plays a run's policy greedily on the first `--episodes` evaluation seeds, then samples a group of `--group`
rollouts at T = 1 on every seed the greedy policy failed and on as many seeds it solved (the first ones), as an
RL step samples a group. For each side it counts the groups with mixed outcomes (a group-relative advantage
that rewards the success), all failed and all solved, and the success rate of the samples. If the greedy
failures sit in groups that all fail, RL at T = 1 has no signal towards solving them, whatever the method
(a shaped reward may still separate the failures, e.g. by cells filled on Sudoku).

    python benchmarks/greedy_failure_signal.py RUN --policy final_policy --episodes 256 --group 8
    python benchmarks/greedy_failure_signal.py RUN --policy warm_start --episodes 256 --group 8

Success is the environment's success flag. Evaluation seeds, not RL's training seeds: the question is asked of
the puzzles whose greedy success the tables report.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SignalRow:
    """One side of the table: the seeds the greedy policy solved, or failed."""

    label: str
    groups: int
    mixed: int  # groups with both outcomes: a non-zero advantage
    all_failed: int
    all_solved: int
    sampled_success: float  # share of the sampled episodes that succeeded


def signal_rows(greedy: Mapping[int, bool], samples: Mapping[int, Sequence[bool]]) -> list[SignalRow]:
    """`greedy[seed]`: did the greedy episode succeed; `samples[seed]`: the outcomes of its T = 1 group (seeds
    without a group are left out). Rows: greedy failed, then greedy solved."""
    rows = []
    for label, wanted in (("greedy failed", False), ("greedy solved", True)):
        groups = [samples[s] for s in greedy if greedy[s] is wanted and s in samples]
        outcomes = [o for g in groups for o in g]
        rows.append(SignalRow(
            label=label,
            groups=len(groups),
            mixed=sum(1 for g in groups if any(g) and not all(g)),
            all_failed=sum(1 for g in groups if not any(g)),
            all_solved=sum(1 for g in groups if all(g)),
            sampled_success=sum(outcomes) / len(outcomes) if outcomes else 0.0,
        ))
    return rows


def groups_to_sample(greedy: Mapping[int, bool]) -> list[int]:
    """Every seed the greedy policy failed, and as many of the solved ones (in seed order)."""
    failed = [s for s in greedy if not greedy[s]]
    solved = [s for s in greedy if greedy[s]]
    return failed + solved[: len(failed)]


def main() -> None:
    import dataclasses

    from agentbench_af.evaluate.evaluate import evaluate_policy
    from agentbench_af.rollout.collect import collect_rollouts
    from agentbench_af.train.bookkeeping import saved_run

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", type=Path, help="a run directory written by `train`")
    parser.add_argument("--policy", choices=("final_policy", "warm_start"), default="final_policy")
    parser.add_argument("--episodes", type=int, default=256, help="greedy episodes (the first evaluation seeds)")
    parser.add_argument("--group", type=int, default=8, help="T = 1 rollouts per sampled seed")
    args = parser.parse_args()
    if args.episodes < 1 or args.group < 2:
        parser.error("--episodes must be at least 1 and --group at least 2")

    try:
        cfg = saved_run.run_config(args.run)
    except ValueError as exc:  # no such folder, or no config.yaml in it
        parser.error(str(exc))
    policy, engine = saved_run.load_for_play(args.run, cfg, args.policy)

    result, trajs = evaluate_policy(engine, policy.tokenizer, policy.chat, cfg.env.id, args.episodes, 0.0,
                                    cfg.rollout, cfg.env.overrides)
    greedy = {t.seed: bool(t.success) for t in trajs}
    seeds = groups_to_sample(greedy)
    group_cfg = dataclasses.replace(cfg.rollout, group_size=args.group, temperature=1.0)
    sampled = collect_rollouts(engine, policy.tokenizer, policy.chat, cfg.env.id, seeds, group_cfg,
                               env_kwargs=cfg.env.overrides)
    samples: dict[int, list[bool]] = {}
    for t in sampled:
        samples.setdefault(t.seed, []).append(bool(t.success))

    print(f"{cfg.env.id} {args.policy}: greedy success {result.success:.3f} on {result.episodes} seeds; "
          f"groups of {args.group} at T = 1")
    print("| seeds | groups | mixed outcomes (a success signal) | all failed | all solved | T = 1 success of the samples |")
    print("|---|---|---|---|---|---|")
    for r in signal_rows(greedy, samples):
        print(f"| {r.label} | {r.groups} | {r.mixed} | {r.all_failed} | {r.all_solved} | {r.sampled_success:.1%} |")


if __name__ == "__main__":
    main()
