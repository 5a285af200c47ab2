"""Update-step cost: tokens/s of one policy update, and ActFocus vs GRPO step time and peak memory.

One process, one rollout batch (P prompts x G rollouts collected by the real collector from a briefly
warm-started tiny policy, old log-probs recomputed as the loop does). Each timed step is what the loop
does after collection: `compute_advantages`, `compute_token_weights` (the ActFocus weights are inside
the step time) and `ppo_update` (forward, loss, backward, optimizer step). Before every step the policy
weights are restored and a fresh AdamW is built (outside the timer), so every step does the same work.
The methods alternate (AB, then BA, ...) over `--repeats` timed repetitions after one warm-up each,
then over `--memory-repeats` repetitions that measure peak memory (a separate phase: pinning the mmap
threshold below adds page faults that would slow the timed steps); medians are reported, with ratios
against the first method.

Peak memory of a step: on CUDA, `torch.cuda.max_memory_allocated()` minus the memory allocated before
the step. On CPU (`--memory-method profiler`, the default) the step runs under `torch.profiler` with
`profile_memory=True` and the peak is the maximum, over the step's allocation events, of the bytes
torch holds that were allocated inside the step (`export_memory_timeline`, summed over categories):
exact and repeatable, but deprecated in torch and slow, so it runs in its own phase. `--memory-method
rss` is the fallback: each step runs in a forked child that returns free heap pages to the kernel,
pins glibc's mmap threshold to 64 KiB and turns off transparent huge pages, then reports the
resident-set high-water mark (`VmHWM`, reset through `/proc/self/clear_refs`) above the level at entry;
it also counts Python objects and is repeatable only to about +-2 % between processes.

    python benchmarks/update_step.py                                   # grpo vs grpo+actfocus, CPU
    python benchmarks/update_step.py --methods ppo ppo+actfocus --repeats 11 --json

Left out: multi-GPU updates and the rollout phase (see rollout_throughput.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import typer
from tabulate import tabulate
from torch.profiler import ProfilerActivity, profile

import agentbench_af
from agentbench_af.credit import compute_advantages, compute_token_weights
from agentbench_af.models.forward import token_stats
from agentbench_af.rollout.collect import collect_rollouts
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.rollout.seeds import draw_train_seeds
from agentbench_af.rollout.to_batch import trajectories_to_batch
from agentbench_af.rollout.types import RolloutConfig
from agentbench_af.train.config import TrainConfig
from agentbench_af.train.distributed.data_parallel import TrainModules
from agentbench_af.train.update.loss import LossConfig
from agentbench_af.train.update.ppo import Credit, UpdateSettings, ppo_update

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rollout_throughput import warm_policy  # noqa: E402

M_MMAP_THRESHOLD = -3
PR_SET_THP_DISABLE = 41


@dataclass
class Step:
    method: str
    seconds: float
    weight_seconds: float  # advantages + token weights
    peak_bytes: int


def pin_mmap_threshold() -> None:
    """Make the resident set track live allocations: free heap pages are returned to the kernel
    (`malloc_trim`), every allocation of 64 KiB or more gets its own mapping, and transparent huge pages
    are off (they would round the resident set up in 2 MiB steps that depend on address alignment)."""
    libc = ctypes.CDLL("libc.so.6")
    libc.prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)
    libc.malloc_trim(0)
    libc.mallopt(M_MMAP_THRESHOLD, 64 * 1024)


def _proc_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        return int(next(x for x in fh if x.startswith(field)).split()[1])


class PeakMemory:
    """Peak bytes allocated inside the block: `cuda` (allocator statistics), `profiler` (torch's CPU
    allocations, exact) or `rss` (resident-set high-water mark above the level at entry)."""

    def __init__(self, how: str) -> None:
        self.how, self.peak = how, 0

    def __enter__(self) -> PeakMemory:
        if self.how == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self.base = torch.cuda.memory_allocated()
        elif self.how == "profiler":
            warnings.filterwarnings("ignore", message=".*export_memory_timeline.*")
            self.prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                                with_stack=True)
            self.prof.__enter__()
        else:
            pin_mmap_threshold()
            self.base = _proc_kib("VmRSS") * 1024
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")  # reset VmHWM to the current resident set
        return self

    def __exit__(self, *exc) -> None:
        if self.how == "cuda":
            torch.cuda.synchronize()
            self.peak = torch.cuda.max_memory_allocated() - self.base
        elif self.how == "profiler":
            self.prof.__exit__(None, None, None)
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "timeline.json"
                self.prof.export_memory_timeline(str(path), device="cpu")
                _, sizes = json.loads(path.read_text())  # bytes per category at each allocation event
            self.peak = int(max((sum(s) for s in sizes), default=0))
        else:
            self.peak = _proc_kib("VmHWM") * 1024 - self.base


def rollout_batch(policy, env_id: str, prompts: int, group: int, max_new_tokens: int, device: torch.device,
                  value_head=None):
    engine = TransformersEngine(policy.lm, policy.pad_token_id, max_batch_size=prompts * group)
    seeds = draw_train_seeds(agentbench_af.make(env_id), prompts, np.random.default_rng(0))
    torch.manual_seed(0)
    trajs = collect_rollouts(engine, policy.tokenizer, policy.chat, env_id, seeds,
                             RolloutConfig(group_size=group, max_new_tokens=max_new_tokens))
    batch = trajectories_to_batch(trajs, "full", policy.pad_token_id)
    with torch.no_grad():  # as the loop: old log-probs from the training forward pass
        b = batch.to(device)
        old, _, values = token_stats(policy.lm, b.input_ids, b.attention_mask, value_head=value_head,
                                     with_entropy=False)
        batch.old_logprobs = (old * b.response_mask).cpu()
        batch.values = None if values is None else (values * b.response_mask).cpu()
    # a rollout from one policy has equal returns in many groups; vary them so advantages are non-zero
    gen = torch.Generator().manual_seed(0)
    batch.traj_return = batch.traj_return + torch.rand(batch.traj_return.shape, generator=gen)
    batch.token_rewards = batch.token_rewards.clone()
    return batch


def in_fork(fn) -> int:
    """Run `fn() -> int` in a forked child (the same allocator state every time) and return its result."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read)
        try:
            os.write(write, str(int(fn())).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as fh:
        text = fh.read()
    os.waitpid(pid, 0)
    if not text:
        raise RuntimeError("the memory measurement child failed")
    return int(text)


def run_step(policy, value_head, snapshot, batch, cfg: TrainConfig, device, autocast, memory: str = "none") -> Step:
    policy.lm.load_state_dict(snapshot["lm"])
    if value_head is not None:
        value_head.load_state_dict(snapshot["value_head"])
    groups = [{"params": list(policy.lm.parameters()), "lr": cfg.rl.lr}]
    if value_head is not None:
        groups.append({"params": list(value_head.parameters()), "lr": cfg.rl.critic_lr})
    optimizer = torch.optim.AdamW(groups, weight_decay=0.0)
    gen = torch.Generator().manual_seed(0)
    mem = PeakMemory(memory)
    with mem if memory != "none" else contextlib.nullcontext():
        t0 = time.perf_counter()
        advantage = compute_advantages(batch, cfg.credit)
        weights = compute_token_weights(batch, cfg.credit)
        t_weights = time.perf_counter() - t0
        ppo_update(TrainModules(policy.lm, value_head), optimizer, batch,
                   Credit(advantage.advantages, advantage.returns, weights),
                   UpdateSettings(LossConfig(), device, autocast_dtype=autocast), gen)
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
    return Step(cfg.method, seconds, t_weights, mem.peak)


def main(
    methods: list[str] = typer.Option(["grpo", "grpo+actfocus"], "--methods"),
    env_id: str = typer.Option("FrozenLake-4x4-v0", "--env"),
    model: str = typer.Option("tiny-0.2m"),
    sft_steps: int = typer.Option(60),
    prompts: int = typer.Option(16),
    group: int = typer.Option(8),
    max_new_tokens: int = typer.Option(48),
    repeats: int = typer.Option(9, help="Timed repetitions per method."),
    memory_repeats: int = typer.Option(3, help="Repetitions per method for peak memory."),
    memory_method: str = typer.Option("profiler", help="CPU peak memory: profiler (exact) or rss."),
    threads: int = typer.Option(1),
    device_name: str = typer.Option("cpu", "--device"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    torch.set_num_threads(threads)
    device = torch.device(device_name)
    autocast = torch.bfloat16 if device.type == "cuda" else None
    policy = warm_policy(env_id, model, sft_steps)
    policy.lm.to(device)
    cfgs = [TrainConfig(method=m) for m in methods]
    value_head = policy.ensure_value_head() if any(c.needs_value_head for c in cfgs) else None
    batch = rollout_batch(policy, env_id, prompts, group, max_new_tokens, device, value_head)
    snapshot = {"lm": {k: v.clone() for k, v in policy.lm.state_dict().items()},
                "value_head": None if value_head is None else {k: v.clone() for k, v in value_head.state_dict().items()}}
    steps: dict[str, list[Step]] = {m: [] for m in methods}
    for cfg in cfgs:  # warm-up, not counted
        run_step(policy, value_head if cfg.needs_value_head else None, snapshot, batch, cfg, device, autocast)
    for r in range(repeats):  # timing phase: the allocator as it comes
        for cfg in cfgs if r % 2 == 0 else cfgs[::-1]:
            steps[cfg.method].append(run_step(policy, value_head if cfg.needs_value_head else None, snapshot, batch,
                                              cfg, device, autocast))
    how = "cuda" if device.type == "cuda" else memory_method
    peaks: dict[str, list[int]] = {m: [] for m in methods}
    for r in range(memory_repeats):  # memory phase
        for cfg in cfgs if r % 2 == 0 else cfgs[::-1]:
            head = value_head if cfg.needs_value_head else None

            def step(cfg=cfg, head=head) -> int:
                return run_step(policy, head, snapshot, batch, cfg, device, autocast, memory=how).peak_bytes

            peaks[cfg.method].append(in_fork(step) if how == "rss" else step())
    tokens, response = int(batch.attention_mask.sum()), int(batch.response_mask.sum())
    med = {m: {"seconds": statistics.median(s.seconds for s in ss),
               "weight_ms": 1000 * statistics.median(s.weight_seconds for s in ss),
               "peak_mb": statistics.median(peaks[m]) / 2**20} for m, ss in steps.items()}
    base = methods[0]
    for m in methods:
        med[m]["tokens_per_s"] = tokens / med[m]["seconds"]
        med[m]["response_tokens_per_s"] = response / med[m]["seconds"]
        med[m]["time_ratio"] = med[m]["seconds"] / med[base]["seconds"]
        # robust to a shared machine: each repetition's ratio (the two steps ran back to back), and the fastest steps
        med[m]["paired_time_ratio"] = statistics.median(a.seconds / b.seconds for a, b in zip(steps[m], steps[base], strict=True))
        med[m]["min_time_ratio"] = min(s.seconds for s in steps[m]) / min(s.seconds for s in steps[base])
        med[m]["memory_ratio"] = med[m]["peak_mb"] / med[base]["peak_mb"]
    summary = {"env": env_id, "model": model, "params": policy.num_params, "device": str(device), "threads": threads,
               "batch_shape": list(batch.input_ids.shape), "tokens": tokens, "response_tokens": response,
               "repeats": repeats, "memory_repeats": memory_repeats, "memory_method": how,
               "peaks_mb": {m: [b / 2**20 for b in v] for m, v in peaks.items()}, "median": med,
               "steps": {m: [s.__dict__ for s in ss] for m, ss in steps.items()}}
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    typer.echo(f"{env_id}, {model} ({policy.num_params:,} params), {device}, torch threads {threads}; batch "
               f"{tuple(batch.input_ids.shape)}: {tokens:,} tokens, {response:,} generated; {repeats} timed repeats, "
               f"{memory_repeats} memory repeats ({how}), medians")
    rows = [[m, f"{v['seconds'] * 1000:.0f}", f"{v['weight_ms']:.2f}", f"{v['tokens_per_s']:,.0f}",
             f"{v['response_tokens_per_s']:,.0f}", f"{v['peak_mb']:.1f}", f"{v['time_ratio']:.3f}",
             f"{v['paired_time_ratio']:.3f}", f"{v['min_time_ratio']:.3f}", f"{v['memory_ratio']:.4f}"]
            for m, v in med.items()]
    typer.echo(tabulate(rows, headers=["method", "step ms", "adv+weights ms", "tokens/s", "gen tokens/s", "peak MiB",
                                       "time ratio", "paired", "fastest", "memory ratio"]))
    typer.echo(f"ratios are against {base}: time ratio = ratio of medians, paired = median of per-repetition "
               "ratios, fastest = ratio of the fastest steps")
    spread = {m: (min(s.seconds for s in ss) * 1000, max(s.seconds for s in ss) * 1000) for m, ss in steps.items()}
    typer.echo("step ms min..max: " + ", ".join(f"{m} {lo:.0f}..{hi:.0f}" for m, (lo, hi) in spread.items()))


if __name__ == "__main__":
    typer.run(main)
