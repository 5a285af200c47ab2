"""Cost of one SFT warm-start step on SmolLM2-135M-Instruct on the CPU: full fine-tuning against LoRA
(`model.lora_rank`) and LoRA with activation checkpointing (`model.gradient_checkpointing`).

    nice -n 10 python benchmarks/sft_step_cost.py --threads 1
    python benchmarks/sft_step_cost.py --modes full lora --rank 16 --rows 16 --columns 256 --steps 3 --json
    MALLOC_MMAP_THRESHOLD_=65536 nice -n 10 python benchmarks/sft_step_cost.py --threads 1 --json
    python benchmarks/sft_step_cost.py --modes lora lora+gc --bf16   # forwards under bf16 autocast
    python benchmarks/sft_step_cost.py --modes lora --bf16 --warmup 0 --steps 4 --read-both --json

The third line pins glibc's mmap threshold in the child processes (they inherit the environment). Every
large block then goes back to the kernel when it is freed, so the peak resident set counts the memory
torch holds rather than freed blocks glibc keeps, at the price of page faults (slower steps).

The batch is real: `--rows` expert demonstrations of `--env` in SmolLM2's chat format (the context the
warm start trains on, `train.warm.demos`), each cut or right-padded to exactly `--columns` tokens; the
loss is on their generated tokens (the batch's response tokens are printed). Each mode runs in its own
child process (so its peak memory is its own): it loads the model, adds adapters (`models.lora.add_lora`)
and checkpointing as the warm start does, then runs `--warmup` untimed steps and `--steps` timed ones of
the warm start's own step (`train.warm.sft.sft_step`: loss, backward, clipping, AdamW), each on the same
batch. Reported: seconds per timed step (mean and each), trainable parameters, the resident set when the
timed steps begin, and the peak resident set over all steps (VmHWM; the window is reset after the model
is loaded, so the GGUF conversion of a first use does not count) and the process's lifetime
`ru_maxrss`. The load average (`os.getloadavg`) is printed before and after: the machine may be shared.
`--bf16` runs the forwards under bf16 autocast (`model.dtype=bfloat16`: weights, gradients and AdamW
stay fp32); it pays only on CPUs with native bf16 (docs/benchmarks.md, "bf16 on the CPU"). `--read-both`
then reads the trained weights' loss on the batch twice, with an fp32 forward and with a bf16-autocast one:
how much of the steps' change a bf16 forward (a bf16 sampler, a bf16 update) sees (docs/smollm2.md).
Left out: the LoRA merge at the end of a warm start (once per warm start, not per step) and GPUs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_trl import new_peak_window, peak_mb, rss_mb  # noqa: E402

MODES = {"full": (False, False), "lora": (True, False), "lora+gc": (True, True), "full+gc": (False, True)}


def fit_width(batch, width: int, pad: int):
    """`batch` with its token tensors cut or right-padded to exactly `width` columns (the fields SFT reads)."""
    t = batch.input_ids.shape[1]
    if t >= width:
        cut = {k: getattr(batch, k)[:, :width] for k in ("input_ids", "attention_mask", "response_mask")}
        return dataclasses.replace(batch, **cut)
    extra = width - t
    return dataclasses.replace(
        batch,
        input_ids=torch.nn.functional.pad(batch.input_ids, (0, extra), value=pad),  # (B, width)
        attention_mask=torch.nn.functional.pad(batch.attention_mask, (0, extra), value=False),  # (B, width)
        response_mask=torch.nn.functional.pad(batch.response_mask, (0, extra), value=False),  # (B, width)
    )


def one_mode(args: argparse.Namespace) -> dict:
    """Run one mode in this process; returns its figures."""
    import numpy as np

    import agentbench_af
    from agentbench_af.models.checkpointing import enable_checkpointing
    from agentbench_af.models.lora import add_lora, merged_copy, trainable_parameters
    from agentbench_af.models.policy import build_policy
    from agentbench_af.rollout.seeds import draw_train_seeds
    from agentbench_af.rollout.to_batch import trajectories_to_batch
    from agentbench_af.rollout.types import RolloutConfig
    from agentbench_af.train.config import ModelConfig
    from agentbench_af.train.warm.demos import demonstration_trajectories
    from agentbench_af.train.warm.sft import sft_loss, sft_step

    torch.set_num_threads(args.threads)
    lora, checkpointing = MODES[args.mode]
    model_cfg = ModelConfig(name=args.model, lora_rank=args.rank if lora else 0, lora_alpha=args.alpha,
                            gradient_checkpointing=checkpointing)
    policy = build_policy(args.model, [args.env], model_cfg.vocab_size, model_cfg.tokenizer_episodes, args.seed)
    rollout = RolloutConfig(context_mode="full", max_new_tokens=args.max_new_tokens)
    env = agentbench_af.make(args.env)
    seeds = draw_train_seeds(env, args.rows, np.random.default_rng([args.seed, 1]))
    trajs = demonstration_trajectories(args.env, seeds, policy.tokenizer, policy.chat, rollout, {})
    data = trajectories_to_batch(trajs, "full", policy.pad_token_id)
    mb = fit_width(data.select(torch.arange(min(args.rows, data.batch_size))).crop(), args.columns,
                   policy.pad_token_id)
    settings = model_cfg.lora_for(sft=True)
    if settings is not None:
        add_lora(policy.lm, settings, seed=args.seed)
    if checkpointing:
        enable_checkpointing(policy.lm)
    params = trainable_parameters(policy.lm)
    optimizer = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0)
    policy.lm.train()
    new_peak_window()
    rss_start = rss_mb()
    times, losses = [], []
    for i in range(args.warmup + args.steps):
        start = time.perf_counter()
        losses.append(sft_step(policy.lm, params, optimizer, mb, autocast=torch.bfloat16 if args.bf16 else None))
        if i >= args.warmup:
            times.append(time.perf_counter() - start)
    read = {}
    if args.read_both:  # the trained weights' loss on the batch, read by an fp32 and by a bf16-autocast forward
        with torch.no_grad():
            read["loss_fp32_forward"] = float(sft_loss(policy.lm, mb))
            with torch.autocast(mb.input_ids.device.type, dtype=torch.bfloat16):
                read["loss_bf16_forward"] = float(sft_loss(policy.lm, mb))
                if settings is not None:  # the adapters merged into the fp32 weights first, then cast
                    read["loss_bf16_forward_merged"] = float(sft_loss(merged_copy(policy.lm), mb))
    return {
        **read,
        "mode": args.mode, "autocast": "bfloat16" if args.bf16 else "float32", "threads": args.threads,
        "rows": int(mb.input_ids.shape[0]),
        "columns": int(mb.input_ids.shape[1]), "response_tokens": int(mb.response_mask.sum()),
        "trainable_params": sum(p.numel() for p in params),
        "total_params": sum(p.numel() for p in policy.lm.parameters()),
        "step_s": sum(times) / len(times), "steps_s": [round(t, 2) for t in times], "losses": losses,
        "rss_start_mib": rss_start, "peak_rss_mib": peak_mb(),
        "ru_maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modes", nargs="+", default=["full", "lora", "lora+gc"], choices=list(MODES))
    ap.add_argument("--mode", choices=list(MODES), help=argparse.SUPPRESS)  # a child process's one mode
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--env", default="FrozenLake-4x4-slippery-v0")
    ap.add_argument("--rows", type=int, default=16)
    ap.add_argument("--columns", type=int, default=256)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--alpha", type=int, default=16)
    ap.add_argument("--lr", type=float, default=2e-4)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bf16", action="store_true", help="forwards under bf16 autocast (model.dtype=bfloat16)")
    ap.add_argument("--read-both", action="store_true",
                    help="after the steps, read the batch's loss with an fp32 and with a bf16-autocast forward "
                         "(and, with LoRA, a bf16 forward of the adapters merged into the weights)")
    ap.add_argument("--json", action="store_true", help="print one JSON line per mode instead of the table")
    args = ap.parse_args()
    if args.mode:
        print(json.dumps(one_mode(args)))
        return
    print(f"load average before: {os.getloadavg()}; {os.cpu_count()} CPUs; torch threads {args.threads}", flush=True)
    rows = []
    for mode in args.modes:
        child = [a for a in sys.argv[1:] if a != "--json"]
        out = subprocess.run([sys.executable, os.path.abspath(__file__), *child, "--mode", mode],
                             check=True, capture_output=True, text=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]) if args.json else
              f"{mode:8s} {rows[-1]['autocast']:8s} {rows[-1]['step_s']:7.1f} s/step {rows[-1]['steps_s']}  trainable "
              f"{rows[-1]['trainable_params']:,}  RSS at start {rows[-1]['rss_start_mib']:,.0f} MiB  peak "
              f"{rows[-1]['peak_rss_mib']:,.0f} MiB  (ru_maxrss {rows[-1]['ru_maxrss_mib']:,.0f} MiB)", flush=True)
    first = rows[0]
    print(f"batch {first['rows']} x {first['columns']} tokens, {first['response_tokens']} generated; "
          f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
