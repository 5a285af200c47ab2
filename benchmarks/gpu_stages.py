"""The stages of the GPU check (`benchmarks/gpu_check.py` runs each in its own process, with its own time
limit): each one measures through the project's own code paths and writes one JSON dict.

    python benchmarks/gpu_stages.py STAGE --result FILE --work DIR [--device cuda|cpu] [--tiny]

Stages:
- `device`: GPU name, driver, torch/CUDA/transformers versions, and a measured bf16 matrix-product rate.
- `tiny-7m`: one full GRPO step (collect + score + credit + update) of the tiny family on the device and on
  the CPU (all cores), from the same weights and seeds: the CPU / device time ratio.
- `qwen-0.5b`: a random-weight model of Qwen2.5-0.5B-Instruct's exact shape (its config values and its
  151,936-row vocabulary), weights saved in bf16 as the released checkpoints are, under the `paper`
  preset's recipe: one collection of a paper-sized batch (8 prompts x 16 rollouts, 400 new tokens a turn)
  with the transformers engine, then one GRPO update (`train.update.step.update`, the loop's step-0
  path: scoring pass, credit, `ppo_update` with 4 minibatches, bf16 autocast).
- `qwen-1.5b`, `qwen-3b`: the same update on the 0.5B stage's batch (or, without it, on a batch collected
  by a small random Qwen with the same tokenizer).
  Every update stage tries the whole batch first; on CUDA out-of-memory it halves the rows (down to one
  per minibatch) and reports the largest batch that fit, the peak memory, tokens/s and MFU.
- `paper`: `agentbench-af reproduce --preset paper` (the CLI, a subprocess) for 2 RL steps on FrozenLake
  with a random 0.5B-shaped model saved under `--model-dir`; the preset's recipe except the step count,
  the engine (transformers: no vLLM wheel can travel to the GPU machine), `max_new_tokens` and the number
  of evaluation episodes (to fit the time limit).
- `nccl-ddp`, `nccl-fsdp2`: under `torchrun --nproc-per-node 1`, the project's data-parallel update
  (`DataParallel` wrap, `UpdateSync`, rank-wise credit, FSDP2's gather after the update) with the
  process group of the device (nccl on CUDA, gloo on CPU), against the plain one-process update from the
  same weights on the same batch. World size 1 is all one GPU allows (NCCL refuses two ranks on one
  device), and the project treats WORLD_SIZE=1 as the plain run, so this stage marks its ranks active
  to make the data-parallel path run; the multi-GPU case stays untested.

`--tiny` (the CPU dry run CI runs): every model is a tiny random Qwen (hidden 64) with the 512-token
tokenizer, every batch 2 prompts x 2 rollouts of 16 new tokens, and tiny-0.2m instead of tiny-7m.

MFU: model FLOPs as 6 x parameters x tokens for a forward and backward pass, plus 2 x parameters x tokens
for the scoring pass's forward (the loop's step-0 update scores the batch first), over the device's
datasheet dense bf16 peak (`BF16_PEAK`, looked up from the device name; null when the name is unknown).
It counts every non-padding token and ignores attention's own FLOPs and the savings of the shared-prompt
forward and the response-only logits, so it is an approximation (the usual one, arXiv:2204.02311 B).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from agentbench_af.train.distributed.ranks import Ranks

ENV = "FrozenLake-4x4-slippery-v0"
QWEN_NAME = "Qwen2.5-0.5B-Instruct"  # the paper preset's model folder name


@dataclass(frozen=True)
class QwenShape:
    """A Qwen2.5 size's config.json values; `vocab` rows of the (tied) embedding."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int = 151_936


#: Qwen2.5-{0.5B,1.5B,3B}-Instruct's config.json (hidden_size, num_hidden_layers, num_attention_heads,
#: num_key_value_heads, intermediate_size, vocab_size); all three tie their embeddings
QWEN25 = {
    "qwen-0.5b": QwenShape(896, 24, 14, 2, 4864),
    "qwen-1.5b": QwenShape(1536, 28, 12, 2, 8960),
    "qwen-3b": QwenShape(2048, 36, 16, 2, 11008),
}
TINY_QWEN = QwenShape(64, 2, 2, 1, 352, vocab=512)  # the dry run's stand-in for every size (head dim 32)

#: datasheet dense bf16 tensor-core peaks (FLOP/s), matched against torch.cuda.get_device_name in order
BF16_PEAK = (
    ("H100 PCIe", 756e12), ("H100 NVL", 835e12), ("H100", 989e12), ("H200", 989e12), ("H800", 989e12),
    ("GH200", 989e12), ("B200", 2250e12), ("A100", 312e12), ("L40S", 362e12), ("A10G", 70e12),
)
H100_USABLE_BYTES = 81559 * 2**20  # what nvidia-smi reports for an H100 80GB HBM3


def bf16_peak(device_name: str) -> float | None:
    """The datasheet dense bf16 FLOP/s of a GPU by name; None when unknown (then no MFU)."""
    for key, peak in BF16_PEAK:
        if key in device_name:
            return peak
    return None


def update_flops(params: int, tokens: int, scoring_pass: bool) -> float:
    """6 N T for the update's forward and backward, plus 2 N T for a separate scoring forward."""
    return (6 + (2 if scoring_pass else 0)) * params * tokens


def mfu(flops: float, seconds: float, peak: float | None) -> float | None:
    return None if peak is None or seconds <= 0 else flops / seconds / peak


# ---------------------------------------------------------------------------------------------- helpers


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_reset(device: torch.device) -> int:
    if device.type != "cuda":
        return 0
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    return torch.cuda.memory_allocated(device)


def peak_bytes(device: torch.device) -> int | None:
    return torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None


def gib(n: float | None) -> float | None:
    return None if n is None else round(n / 2**30, 2)


def is_oom(exc: BaseException) -> bool:
    return isinstance(exc, torch.cuda.OutOfMemoryError) or "out of memory" in str(exc).lower()


def qwen_tokenizer(vocab: int):
    """The ChatML tokenizer of `models.random_qwen` (512 BPE tokens) filled with unused entries up to `vocab`
    ids, so that the model's embedding has `vocab` rows and everything it samples decodes."""
    from agentbench_af.models.corpus import environment_corpus
    from agentbench_af.models.random_qwen import chatml_tokenizer

    return chatml_tokenizer(environment_corpus([ENV], 10, 0), vocab_size=min(vocab, 512), pad_to=vocab)


def save_qwen(directory: Path, shape: QwenShape, tokenizer, dtype: torch.dtype = torch.bfloat16) -> tuple[Path, int]:
    """A random Qwen2 of `shape` written with save_pretrained in `dtype`; returns (directory, parameters)."""
    from agentbench_af.models.random_qwen import random_qwen2

    lm = random_qwen2(tokenizer, hidden=shape.hidden, layers=shape.layers, heads=shape.heads,
                      kv_heads=shape.kv_heads, intermediate=shape.intermediate).to(dtype)
    n = sum(p.numel() for p in lm.parameters())
    lm.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    del lm
    return directory, n


def paper_config(model_root: Path, work: Path, overrides: list[str]):
    """The `paper` preset's TrainConfig for FrozenLake x Qwen2.5-0.5B-Instruct x GRPO (as `reproduce` builds
    it, model folder under `model_root`), with `overrides` last."""
    from agentbench_af.sweep.reproduce import ReproduceConfig, prepare_spec
    from agentbench_af.sweep.spec import expand

    spec = prepare_spec(ReproduceConfig(preset="paper", model_dir=model_root, work_dir=work, envs=(ENV,),
                                        models=(QWEN_NAME,), methods=("grpo",), overrides=tuple(overrides)))
    return expand(spec)[0]


def device_overrides(args) -> list[str]:
    return [f"run.device={args.device}"] + (["model.dtype=float32"] if args.device == "cpu" else [])


def batch_overrides(args) -> list[str]:
    """The paper preset's batch on a GPU; 2 x 2 rollouts of 16 tokens in the dry run."""
    small = ["rl.prompts_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=16",
             "rollout.max_context_tokens=1024"]
    return ["rollout.engine=transformers", *(small if args.tiny else [])]


def collect_batch(cfg, policy, autocast, seed: int = 0):
    """One step's rollouts as the loop collects them: (batch, seconds, generated tokens)."""
    import agentbench_af
    from agentbench_af.credit import credit_view
    from agentbench_af.rollout.collect import collect_rollouts
    from agentbench_af.rollout.engine import build_engine
    from agentbench_af.rollout.seeds import draw_train_seeds
    from agentbench_af.rollout.to_batch import trajectories_to_batch

    engine = build_engine(cfg.rollout, policy.lm, policy.pad_token_id, autocast, cfg.run.seed)
    env = agentbench_af.make(cfg.env.id, **cfg.env.overrides)
    seeds = draw_train_seeds(env, cfg.rl.prompts_per_step, np.random.default_rng(seed))
    torch.manual_seed(seed)
    device = next(policy.lm.parameters()).device
    sync(device)
    t0 = time.perf_counter()
    trajs = collect_rollouts(engine, policy.tokenizer, policy.chat, cfg.env.id, seeds, cfg.rollout, cfg.env.overrides)
    sync(device)
    seconds = time.perf_counter() - t0
    batch = credit_view(trajectories_to_batch(trajs, cfg.rollout.context_mode, policy.pad_token_id), cfg.credit)
    return batch, seconds, int(batch.response_mask.sum())


def timed_update(cfg, model_dir: Path, batch, device: torch.device, autocast) -> dict:
    """`train.update.step.update` (the loop's step, on a batch its own engine sampled) on a fresh learner; seconds,
    peak memory, weight change."""
    from agentbench_af.train.update.learner import build_learner
    from agentbench_af.train.update.step import StepContext, update

    learner = build_learner(cfg, model_dir, device)
    lm = learner.trained.lm
    probe = next(p for n, p in lm.named_parameters() if "layers.0.mlp.down_proj" in n)
    before = probe.detach().clone()
    base = peak_reset(device)
    sync(device)
    t0 = time.perf_counter()
    ctx = StepContext(torch.Generator().manual_seed(0), device, autocast, on_policy=True)
    _, metrics = update(learner, batch, cfg, ctx)
    sync(device)
    seconds = time.perf_counter() - t0
    peak = peak_bytes(device)
    changed = float((probe.detach() != before).float().mean())
    out = {"seconds": seconds, "peak_bytes": peak, "peak_above_start_bytes": None if peak is None else peak - base,
           "param_dtype": str(probe.dtype).replace("torch.", ""), "probe_changed_fraction": changed,
           "pg_loss": float(metrics.get("pg_loss", float("nan")))}
    del learner, lm, probe, before
    return out


def update_until_it_fits(cfg, model_dir: Path, batch, device: torch.device, autocast, params: int,
                         peak: float | None) -> dict:
    """The update on the whole batch, then (on out-of-memory) on its first half, quarter, ... of rows (down
    to one row per minibatch); the first that fits is timed twice (the first run warms up kernels)."""
    rows, attempts = batch.batch_size, []
    while rows >= cfg.rl.minibatches:
        gc.collect()  # what a failed attempt held (its traceback is gone by now)
        if device.type == "cuda":
            torch.cuda.empty_cache()
        part = batch if rows == batch.batch_size else batch.select(torch.arange(rows)).crop()
        try:
            first = timed_update(cfg, model_dir, part, device, autocast)
            second = timed_update(cfg, model_dir, part, device, autocast)
        except Exception as exc:  # noqa: BLE001 - out-of-memory is a finding; anything else is re-raised
            if not is_oom(exc):
                raise
            attempts.append({"rows": rows, "error": str(exc).splitlines()[0][:300]})
            rows //= 2
            continue
        tokens = int(part.attention_mask.sum())
        flops = update_flops(params, tokens, scoring_pass=True)
        return {"fits_full_batch": rows == batch.batch_size, "rows": rows, "full_rows": batch.batch_size,
                "oom_attempts": attempts, "tokens": tokens, "generated_tokens": int(part.response_mask.sum()),
                "width": int(part.input_ids.shape[1]), "update_seconds": second["seconds"],
                "first_update_seconds": first["seconds"], "update_tokens_per_s": tokens / second["seconds"],
                "update_flops": flops, "mfu": mfu(flops, second["seconds"], peak),
                "peak_memory_gib": gib(second["peak_bytes"]),
                "fits_h100_80gb": None if second["peak_bytes"] is None else second["peak_bytes"] <= H100_USABLE_BYTES,
                "param_dtype": second["param_dtype"], "probe_changed_fraction": second["probe_changed_fraction"],
                "pg_loss": second["pg_loss"]}
    return {"fits_full_batch": False, "rows": 0, "full_rows": batch.batch_size, "oom_attempts": attempts,
            "fits_h100_80gb": False}


def device_peak(device: torch.device) -> float | None:
    return bf16_peak(torch.cuda.get_device_name(device)) if device.type == "cuda" else None


# ----------------------------------------------------------------------------------------------- stages


def stage_device(args) -> dict:
    import transformers

    device = torch.device(args.device)
    out = {"python": platform.python_version(), "torch": torch.__version__, "torch_cuda": torch.version.cuda,
           "transformers": transformers.__version__, "cpu_count": os.cpu_count(), "device": args.device}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        out.update(name=props.name, capability=f"{props.major}.{props.minor}", memory_gib=gib(props.total_memory),
                   multiprocessors=props.multi_processor_count, cudnn=torch.backends.cudnn.version(),
                   bf16_peak_tflops=None if bf16_peak(props.name) is None else bf16_peak(props.name) / 1e12)
        try:
            smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,name,memory.total", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30)
            out["nvidia_smi"] = smi.stdout.strip() or smi.stderr.strip()
        except (OSError, subprocess.TimeoutExpired) as exc:
            out["nvidia_smi"] = f"not available: {exc}"
    else:
        out.update(name=platform.processor() or platform.machine(), bf16_peak_tflops=None)
    # the measured ceiling: a bf16 matrix product on random data (mean of 10 after 3 warm-ups)
    n = 8192 if device.type == "cuda" else 256
    a, b = (torch.randn(n, n, device=device, dtype=torch.bfloat16) for _ in range(2))
    for _ in range(3):
        a @ b
    sync(device)
    t0 = time.perf_counter()
    for _ in range(10):
        a @ b
    sync(device)
    out["matmul_bf16_tflops"] = round(2 * n**3 * 10 / (time.perf_counter() - t0) / 1e12, 3)
    out["matmul_n"] = n
    return out


def stage_tiny(args) -> dict:
    """One full GRPO step of a tiny-family policy on the device and on the CPU, same weights and seeds."""
    from agentbench_af.config import read_config_mapping
    from agentbench_af.models.policy import build_policy
    from agentbench_af.train.config import train_config_from_dict
    from agentbench_af.train.update.learner import build_learner
    from agentbench_af.train.update.step import StepContext, update

    name = "tiny-0.2m" if args.tiny else "tiny-7m"
    small = ["rl.prompts_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=16"] if args.tiny else []
    base = read_config_mapping(Path(__file__).resolve().parents[1] / "baselines" / "cpu" / "base.yaml",
                               [f"model.name={name}", f"env.id={ENV}", "model.tokenizer_episodes=50", *small])
    cfg = train_config_from_dict(base)
    policy = build_policy(name, [ENV], cfg.model.vocab_size, cfg.model.tokenizer_episodes, 0)
    start_dir = policy.save(Path(args.work) / "tiny-start")  # each device's learner loads the same weights
    out = {"model": name, "params": policy.num_params, "rollouts": cfg.rl.prompts_per_step * cfg.rollout.group_size,
           "max_new_tokens": cfg.rollout.max_new_tokens}
    for where in dict.fromkeys([args.device, "cpu"]):
        device = torch.device(where)
        torch.set_num_threads(1 if args.tiny else os.cpu_count() or 1)  # the dry run shares a loaded CPU
        learner = build_learner(cfg, start_dir, device)
        autocast = torch.bfloat16 if device.type == "cuda" else None
        batch, t_collect, generated = collect_batch(cfg, learner.policy, autocast)
        sync(device)
        t0 = time.perf_counter()
        update(learner, batch, cfg, StepContext(torch.Generator().manual_seed(0), device, autocast, on_policy=True))
        sync(device)
        t_update = time.perf_counter() - t0
        out[where] = {"collect_seconds": t_collect, "update_seconds": t_update, "step_seconds": t_collect + t_update,
                      "generated_tokens": generated, "generated_tokens_per_s": generated / t_collect}
    if args.device != "cpu":
        out["cpu_over_device_step"] = out["cpu"]["step_seconds"] / out[args.device]["step_seconds"]
    return out


def stage_qwen(args) -> dict:
    """A Qwen2.5-shaped random model under the paper recipe: (0.5B) collect a batch, then the update."""
    shape = TINY_QWEN if args.tiny else QWEN25[args.stage]
    device = torch.device(args.device)
    work = Path(args.work)
    tokenizer = qwen_tokenizer(shape.vocab)
    root = work / f"models-{args.stage}"
    saved = torch.bfloat16 if device.type == "cuda" else torch.float32  # the released checkpoints are bf16
    model_dir, params = save_qwen(root / QWEN_NAME, shape, tokenizer, saved)
    cfg = paper_config(root, work / f"reproduce-{args.stage}", [*device_overrides(args), *batch_overrides(args)])
    autocast = torch.bfloat16 if cfg.model.dtype == "bfloat16" else None
    peak = device_peak(device)
    out = {"shape": shape.__dict__, "params": params, "saved_dtype": str(saved).replace("torch.", ""), "autocast": str(autocast),
           "recipe": {"prompts_per_step": cfg.rl.prompts_per_step, "group_size": cfg.rollout.group_size,
                      "max_new_tokens": cfg.rollout.max_new_tokens, "minibatches": cfg.rl.minibatches,
                      "max_context_tokens": cfg.rollout.max_context_tokens, "lr": cfg.rl.lr}}
    batch_file = work / "qwen-0.5b-batch.pt"
    if args.stage == "qwen-0.5b":
        from agentbench_af.models.policy import Policy

        policy = Policy.load(model_dir, device)
        batch, seconds, generated = collect_batch(cfg, policy, autocast)
        out["rollout"] = {"seconds": seconds, "generated_tokens": generated, "generated_tokens_per_s": generated / seconds,
                          "rows": batch.batch_size, "width": int(batch.input_ids.shape[1]),
                          "peak_memory_gib": gib(peak_bytes(device))}
        torch.save(batch, batch_file)
        del policy
        if device.type == "cuda":
            torch.cuda.empty_cache()
    elif batch_file.is_file():
        batch = torch.load(batch_file, weights_only=False)  # written by this check's qwen-0.5b stage
        out["batch_from"] = "qwen-0.5b stage"
    else:
        from agentbench_af.models.policy import Policy

        small_dir, _ = save_qwen(work / f"small-{args.stage}", TINY_QWEN if args.tiny else
                                 QwenShape(128, 2, 4, 2, 704, vocab=shape.vocab), tokenizer, saved)
        batch, _, _ = collect_batch(cfg, Policy.load(small_dir, device), autocast)
        out["batch_from"] = "a small random Qwen (the qwen-0.5b stage's batch was missing)"
    out["update"] = update_until_it_fits(cfg, model_dir, batch, device, autocast, params, peak)
    return out


def stage_paper(args) -> dict:
    """`agentbench-af reproduce --preset paper` for 2 RL steps, through the CLI in a subprocess."""
    from agentbench_af.models.random_qwen import save_random_qwen2

    work = Path(args.work) / "paper"
    root = work / "models"
    shape = TINY_QWEN if args.tiny else QWEN25["qwen-0.5b"]
    from agentbench_af.models.corpus import environment_corpus

    save_random_qwen2(root / QWEN_NAME, environment_corpus([ENV], 10, 0), hidden=shape.hidden, layers=shape.layers,
                      heads=shape.heads, kv_heads=shape.kv_heads, intermediate=shape.intermediate)
    sets = ["rl.steps=2", "eval.every=2", "rollout.engine=transformers", *device_overrides(args),
            *(["rl.prompts_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=16", "eval.episodes=2",
               "rollout.max_context_tokens=1024", "run.threads=1"] if args.tiny else
              ["rollout.max_new_tokens=100", "eval.episodes=16"])]
    cmd = [sys.executable, "-m", "agentbench_af.cli", "reproduce", "--preset", "paper", "--model-dir", str(root),
           "--env", ENV, "--model", QWEN_NAME, "--method", "grpo", "--out", str(work / "board"),
           "--work-dir", str(work / "work"), "--backend", "serial", "--allow-dirty", "--quiet"]
    for item in sets:
        cmd += ["--set", item]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    out = {"command": " ".join(cmd[1:]), "overrides": sets, "exit_code": proc.returncode,
           "seconds": time.perf_counter() - t0, "output_tail": (proc.stdout + proc.stderr)[-1500:],
           "vocab": "the 512-token ChatML tokenizer of models.random_qwen (the qwen-* stages use Qwen's 151,936)"}
    records = list((work / "board").rglob("record.json"))
    if not records:
        raise RuntimeError(f"reproduce wrote no record (exit {proc.returncode}): {out['output_tail'][-600:]}")
    record = json.loads(records[0].read_text())
    rows = [json.loads(line) for line in next((work / "work" / "runs").iterdir()).joinpath("metrics.jsonl").open()]
    out.update(record_status=record["status"], steps=[r["step"] for r in rows],
               step_rows=[{k: r.get(k) for k in ("step", "time_step_s", "time_rollout_s", "response_tokens",
                                                 "rollout/logprob_mismatch_max") if k in r} for r in rows[1:]])
    if proc.returncode != 0 or record["status"] != "completed":
        raise RuntimeError(f"reproduce exit {proc.returncode}, record status {record['status']}")
    return out


class _ActiveRanks(Ranks):
    """The ranks of a one-process group, which the project's data-parallel code is told are active."""

    @property
    def active(self) -> bool:
        return True


def stage_dp_probe(args) -> dict:
    """Run under torchrun (1 process): the project's DDP or FSDP2 update vs the plain update."""
    import torch.distributed as dist

    from agentbench_af.train.distributed import ranks as dp
    from agentbench_af.train.update.learner import build_learner
    from agentbench_af.train.update.step import StepContext, update

    strategy = args.stage.removeprefix("nccl-")
    device = torch.device(args.device)
    if device.type == "cuda":  # as `dp.start` does: this rank's own device, with its index
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    backend = dp.backend_for(device)
    dist.init_process_group(backend, device_id=device if device.type == "cuda" else None)
    try:
        work = Path(args.work) / args.stage
        shape = TINY_QWEN if args.tiny else QWEN25["qwen-0.5b"]
        tokenizer = qwen_tokenizer(TINY_QWEN.vocab)  # a 512-row vocabulary: this stage checks the wiring, not memory
        root = work / "models"
        model_dir, params = save_qwen(root / QWEN_NAME, QwenShape(**{**shape.__dict__, "vocab": TINY_QWEN.vocab}),
                                      tokenizer, torch.float32)
        cfg = paper_config(root, work / "reproduce", [*device_overrides(args), "rollout.engine=transformers",
                                                       "rl.prompts_per_step=2", "rollout.group_size=4",
                                                       "rollout.max_new_tokens=32", f"run.parallel={strategy}",
                                                       "rl.lr=1e-4", "rl.minibatches=2"])
        autocast = torch.bfloat16 if cfg.model.dtype == "bfloat16" else None
        plain = build_learner(cfg, model_dir, device)
        batch, _, _ = collect_batch(cfg, plain.policy, autocast)
        ranks = _ActiveRanks(0, 1, 0)
        # a random policy's groups mostly tie (all returns 0): vary the returns so advantages are non-zero
        batch.traj_return = batch.traj_return + torch.rand(batch.traj_return.shape, generator=torch.Generator().manual_seed(0))
        initial = {k: v.detach().float().cpu().clone() for k, v in plain.policy.lm.state_dict().items()}
        dtype = next(plain.policy.lm.parameters()).dtype
        results = {}
        # the step builds `UpdateSync(ranks)` itself where the ranks are active
        for name, learner, r in (("plain", plain, dp.SINGLE), (strategy, build_learner(cfg, model_dir, device, ranks), ranks)):
            sync(device)
            t0 = time.perf_counter()
            update(learner, batch, cfg, StepContext(torch.Generator().manual_seed(0), device, autocast, r))
            learner.parallel.after_update()
            sync(device)
            state = learner.model_state()["lm"]
            results[name] = ({k: v.detach().float().cpu().clone() for k, v in state.items()}, time.perf_counter() - t0,
                             type(learner.trained.lm).__name__)
        a, b = results["plain"][0], results[strategy][0]
        diff = max(float((a[k] - b[k]).abs().max()) for k in a)
        scale = max(float(a[k].abs().max()) for k in a)
        moved = max(float((a[k] - initial[k]).abs().max()) for k in a)
        out = {"backend": backend, "strategy": strategy, "world_size": dist.get_world_size(), "params": params,
               "wrapped_as": results[strategy][2], "plain_seconds": results["plain"][1],
               "parallel_seconds": results[strategy][1], "max_abs_diff_vs_plain": diff, "max_abs_param": scale,
               "max_update_size": moved, "rows": batch.batch_size, "param_dtype": str(dtype).replace("torch.", "")}
        # the same update, reduced another way: rounding only. A path that lost the update (e.g. FSDP2's
        # gathered weights not copied back) would differ by the whole update, 20 times this
        tol = 0.05 * moved
        out["tolerance"] = tol
        if not diff <= tol:
            raise AssertionError(f"{strategy} update differs from the plain one by {diff:.3g} (> {tol:.3g})")
        if moved == 0.0:
            raise AssertionError("the update changed no weight")
        return out
    finally:
        dist.destroy_process_group()


STAGES = {"device": stage_device, "tiny-7m": stage_tiny, "qwen-0.5b": stage_qwen, "qwen-1.5b": stage_qwen,
          "qwen-3b": stage_qwen, "paper": stage_paper, "nccl-ddp": stage_dp_probe, "nccl-fsdp2": stage_dp_probe}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=list(STAGES))
    parser.add_argument("--result", required=True, help="JSON file this stage writes")
    parser.add_argument("--work", default=None, help="scratch folder (models, batches, runs)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tiny", action="store_true", help="tiny shapes (the CPU dry run)")
    args = parser.parse_args(argv)
    args.work = args.work or tempfile.mkdtemp(prefix="gpu-check-")
    Path(args.work).mkdir(parents=True, exist_ok=True)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit(f"--device {args.device} but torch.cuda.is_available() is False")
    t0 = time.perf_counter()
    try:
        result = {"stage": args.stage, "ok": True, **STAGES[args.stage](args)}
    except Exception as exc:  # noqa: BLE001 - the stage's failure is its result
        result = {"stage": args.stage, "ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000],
                  "traceback": traceback.format_exc()[-4000:]}
    result["wall_seconds"] = time.perf_counter() - t0
    Path(args.result).write_text(json.dumps(result, indent=1, default=str))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
