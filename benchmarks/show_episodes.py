"""Print what a saved run's policy writes, turn by turn, on its first evaluation episodes (greedy by default).

    python benchmarks/show_episodes.py RUN --policy warm_start --episodes 3
    python benchmarks/show_episodes.py RUN --temperature 1.0 --page-chars 0

For each episode: its seed and success, then each turn's observation (the last `--page-chars` characters; 0: all
of it) and the response exactly as sampled. This is how docs/smollm2.md read where a WebShop-mini warm start fails.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from agentbench_af.rollout.types import Trajectory


def format_episode(episode: Trajectory, page_chars: int) -> str:
    """One episode as text: a header line, then per turn the observation's tail and the response."""
    outcome = "success" if episode.success else "failure"
    lines = [f"===== seed {episode.seed}: {outcome}, {len(episode.turns)} turns"]
    for i, turn in enumerate(episode.turns):
        page = turn.user_message[-page_chars:] if page_chars > 0 else turn.user_message
        lines += [f"--- turn {i + 1}, observation:", page, f"--- turn {i + 1}, response:", turn.response_text]
    return "\n".join(lines)


def main() -> None:
    import dataclasses

    import torch

    from agentbench_af.evaluate.evaluate import eval_seeds
    from agentbench_af.rollout.collect import collect_rollouts
    from agentbench_af.train.bookkeeping import saved_run

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", type=Path, help="a run directory written by `train`")
    parser.add_argument("--policy", choices=("final_policy", "warm_start"), default="final_policy")
    parser.add_argument("--episodes", type=int, default=3, help="the first evaluation seeds played")
    parser.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    parser.add_argument("--page-chars", type=int, default=900, help="observation characters shown (its end); 0: all")
    args = parser.parse_args()
    if args.episodes < 1:
        parser.error("--episodes must be at least 1")
    if args.temperature < 0:
        parser.error("--temperature must be 0 (greedy) or more")
    try:
        cfg = saved_run.run_config(args.run)
    except ValueError as exc:  # no such folder, or no config.yaml in it
        parser.error(str(exc))

    torch.manual_seed(cfg.run.seed)
    policy, engine = saved_run.load_for_play(args.run, cfg, args.policy)
    seeds = eval_seeds(cfg.env.id, args.episodes, cfg.env.overrides)
    rollout = dataclasses.replace(cfg.rollout, group_size=1, temperature=args.temperature)
    episodes = collect_rollouts(engine, policy.tokenizer, policy.chat, cfg.env.id, seeds, rollout,
                                env_kwargs=dict(cfg.env.overrides))
    print(f"{cfg.env.id} {args.policy}, temperature {args.temperature:g}, evaluation seeds {seeds[0]}-{seeds[-1]}")
    for episode in episodes:
        print(format_episode(episode, args.page_chars))


if __name__ == "__main__":
    main()
