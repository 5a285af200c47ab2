"""How far copying off the page goes on WebShop: two scripted policies, no model.

Prints, per split of a WebShop variant, the success of
- the expert (privileged: it knows which result fits the goal's hidden options), and
- a *first-result copier*, whose every action is a function of what the policy sees: it types the
  instruction (without its price clause), opens the first result by copying its id off the results page,
  clicks each option value the instruction names that the item page offers, and buys (4-6 turns),
and where the expert's item stands in the results of its first search (0 = the first result).

A tiny policy whose held-out success sits far below the copier's fails at copying ids and option values
off the page, not at choosing among them (docs/history/recipe-search.md, WebShop-mini).

    python benchmarks/webshop_copy_bound.py                      # WebShop-mini-v0, both splits
    python benchmarks/webshop_copy_bound.py --env WebShop-v0 --limit 200
"""

from __future__ import annotations

import argparse
from collections import Counter

import agentbench_af
from agentbench_af.api.checker import expert_episode
from agentbench_af.environments.webshop.expert import fitting_asin, goal_options, instruction_query
from agentbench_af.formats.parse import format_response


def as_turn(action: str) -> str:
    return format_response("scripted", [action])


def run_first_result_copier(env, seed: int) -> tuple[bool, int]:
    """The copier's episode from `seed`: (success, where the expert's item stands in its results)."""
    game = env.unwrapped
    env.reset(seed=seed)
    env.step(as_turn(f"search[{instruction_query(game.goal.instruction_text)}]"))
    results = game.session.results
    if not results:
        return False, -1
    target = fitting_asin(results, game.goal, game.catalogue)
    where = results.index(target) if target in results else -1
    first = results[0]
    env.step(as_turn(f"click[{first}]"))
    # the option values the instruction names (its text lists goal.options) that this item page offers
    for value in goal_options(game.catalogue.by_asin[first], game.goal).values():
        env.step(as_turn(f"click[{value}]"))
    _, _, _, _, info = env.step(as_turn("click[Buy Now]"))
    return bool(info.get("success")), where


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="WebShop-mini-v0")
    parser.add_argument("--limit", type=int, default=0, help="goals per split (0: all)")
    args = parser.parse_args()
    env = agentbench_af.make(args.env)
    variant = env.unwrapped.variant
    for split, (lo, hi) in (("held-out", variant.eval_seeds), ("training", variant.train_seeds)):
        seeds = range(lo, hi if not args.limit else min(hi, lo + args.limit))
        expert = copier = 0
        where: Counter[int] = Counter()
        for seed in seeds:
            expert += expert_episode(env.unwrapped, seed)[0]
            won, position = run_first_result_copier(env, seed)
            copier += won
            where[min(position, 3)] += 1
        n = len(seeds)
        spread = ", ".join(f"{'absent' if k < 0 else ('3+' if k == 3 else k)}: {v}" for k, v in sorted(where.items()))
        print(f"{args.env} {split} goals {n}: expert {100 * expert / n:.1f} %, first-result copier "
              f"{100 * copier / n:.1f} %; expert's item at result {spread}")


if __name__ == "__main__":
    main()
