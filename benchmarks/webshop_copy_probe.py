"""Does a WebShop warm start copy the id of the item it opens off the results page, or recall it per goal?

Plays a run's warm start (or final policy) greedily on training goals under three namings of the products:
the real ids, the ids its demonstrations showed (`relabel_ids`, draw 0: the seed's own permutation, which is what
one demonstration per goal shows) and a permutation it never saw (`relabel_ids`, the first draw past
`sft.demo_draws`); for a run trained on the real ids both permutations are new, and the rows say so. A policy that
copies does as well under every naming; one that recalls each goal's id does well only under the naming it was
trained on. For each naming it prints success and where the clicks on a results page land: the first listed result,
another listed one, or an id the page does not list.

    python benchmarks/webshop_copy_probe.py RUN --policy warm_start --goals 30

Training goals, not held-out ones: the question is what the policy learned from its demonstrations.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

RESULTS_PAGE = "Page: results for"
LISTED_ID = re.compile(r"^(B\d{4}) \| ", re.MULTILINE)
CLICKED_ID = re.compile(r"<answer>\s*click\[(B\d{4})\]")


def click_place(page: str, response: str) -> str | None:
    """Where the response's click lands on a results page: "first result", "another listed result", "not on the
    page"; None when the response clicks no product id."""
    clicked = CLICKED_ID.search(response)
    if clicked is None:
        return None
    listed = LISTED_ID.findall(page.split(RESULTS_PAGE, 1)[1]) if RESULTS_PAGE in page else []
    if listed[:1] == [clicked.group(1)]:
        return "first result"
    return "another listed result" if clicked.group(1) in listed else "not on the page"


def probe_namings(trained_relabelled: bool, demo_draws: int) -> list[tuple[str, dict, dict | None]]:
    """The namings played: (row label, env overrides, reset options). Under `relabel_ids` with `sft.demo_draws=N`
    its demonstrations showed draws 0..N-1, so the unseen permutation is draw N; a run trained on the real ids has
    seen no permutation, and its draw 0 and draw 1 are both new to it."""
    relabel = {"relabel_ids": True}
    if not trained_relabelled:
        return [("real ids", {}, None), ("a permutation never seen (draw 0)", relabel, None),
                ("a permutation never seen (draw 1)", relabel, {"draw": 1})]
    shown = "the demonstrations' permutation (draw 0)" if demo_draws == 1 else \
        f"a permutation its demonstrations showed (draw 0 of 0-{demo_draws - 1})"
    return [("real ids", {}, None), (shown, relabel, None),
            (f"a permutation never seen (draw {demo_draws})", relabel, {"draw": demo_draws})]


def main() -> None:
    import dataclasses

    from agentbench_af.rollout.collect import collect_rollouts
    from agentbench_af.train.bookkeeping import saved_run
    from agentbench_af.train.config import demonstration_overrides

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", type=Path, help="a WebShop run directory written by `train`")
    parser.add_argument("--policy", choices=("final_policy", "warm_start"), default="warm_start")
    parser.add_argument("--goals", type=int, default=30, help="the first training goals played")
    args = parser.parse_args()
    try:
        cfg = saved_run.run_config(args.run)
    except ValueError as exc:  # no such folder, or no config.yaml in it
        parser.error(str(exc))
    if not cfg.env.id.startswith("WebShop"):
        parser.error(f"{args.run} is a {cfg.env.id} run; this probe reads WebShop's results pages")
    if args.goals < 1:
        parser.error("--goals must be at least 1")

    trained_relabelled = bool(demonstration_overrides(cfg).get("relabel_ids", False))
    policy, engine = saved_run.load_for_play(args.run, cfg, args.policy)
    import agentbench_af

    lo, _ = agentbench_af.make(cfg.env.id, **cfg.env.overrides).variant.train_seeds
    seeds = list(range(lo, lo + args.goals))
    greedy = dataclasses.replace(cfg.rollout, group_size=1, temperature=0.0)
    namings = probe_namings(trained_relabelled, cfg.sft.demo_draws or 1)
    print(f"{cfg.env.id} {args.policy}, greedy, training goals {seeds[0]}-{seeds[-1]}")
    print("| naming | success | results-page clicks | first result | another listed | not on the page |")
    print("|---|---|---|---|---|---|")
    for label, overrides, options in namings:
        trajs = collect_rollouts(engine, policy.tokenizer, policy.chat, cfg.env.id, seeds, greedy,
                                 env_kwargs={**cfg.env.overrides, **overrides}, reset_options=options)
        places = Counter(p for t in trajs for turn in t.turns if RESULTS_PAGE in turn.user_message
                         if (p := click_place(turn.user_message, turn.response_text)) is not None)
        clicks = sum(places.values())
        print(f"| {label} | {sum(t.success for t in trajs)} / {len(trajs)} | {clicks} | {places['first result']} | "
              f"{places['another listed result']} | {places['not on the page']} |")


if __name__ == "__main__":
    main()
