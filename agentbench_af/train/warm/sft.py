"""Supervised warm start on expert demonstrations: next-token loss on generated (response) tokens only.

The demonstrations are built by `train.warm.demos` with the collector's own context construction, so the
policy is warm-started on exactly the contexts it will see in RL. `SFTConfig.steps` is the budget:
few steps leave a partial policy for RL to improve. Given a checkpoint path, the loop saves its whole
state there every `SFT_CHECKPOINT_EVERY` steps, and after any step that ends `SFT_CHECKPOINT_SECONDS` after the
last save (model, AdamW, schedule, sampling generator, RNGs, time spent), and a
later call with that path continues from it, exactly as if it had not been stopped. The statistics it
returns include its cost: wall-clock and CPU seconds (all threads of the process), summed across resumes. A batch whose full
logits would be large (SmolLM2's 49,152-entry vocabulary) gets its log-probs from the chunked path
(`models.forward.generated_logprobs`); the optimizer gets the trainable parameters only (the LoRA
adapters when `model.lora_rank` > 0). Left out: packing and sequence bucketing.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from transformers import get_cosine_schedule_with_warmup

from agentbench_af.models.forward import generated_logprobs
from agentbench_af.models.lora import trainable_parameters
from agentbench_af.rollout.batch import RolloutBatch
from agentbench_af.rollout.seeds import draw_train_seeds
from agentbench_af.rollout.to_batch import trajectories_to_batch
from agentbench_af.train.bookkeeping.checkpoint import (
    TrainState,
    load_checkpoint,
    restore_rng_states,
    write_state,
)
from agentbench_af.train.config import SFTConfig, TrainConfig, demonstration_overrides
from agentbench_af.train.device import autocast_dtype
from agentbench_af.train.warm.demos import demonstration_trajectories


def warmup_lambda(warmup_steps: int) -> Callable[[int], float]:
    return lambda step: min(1.0, (step + 1) / max(warmup_steps, 1))


def sft_scheduler(optimizer: torch.optim.Optimizer, sft: SFTConfig) -> torch.optim.lr_scheduler.LRScheduler:
    """Linear warm-up over `sft.warmup_steps`, then constant or (cosine) decaying to 0 at `sft.steps`."""
    if sft.schedule == "cosine":
        return get_cosine_schedule_with_warmup(optimizer, sft.warmup_steps, sft.steps)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_lambda(sft.warmup_steps))


#: SFT steps between checkpoints (about 1.5 minutes of a tiny-0.7m WebShop-mini warm start on one CPU thread)
SFT_CHECKPOINT_EVERY = 100
#: wall-clock seconds after which the next step saves anyway (a SmolLM2 SFT step takes minutes on a shared CPU,
#: so 100 steps would lose hours to a kill); the weights do not depend on when a save happens
SFT_CHECKPOINT_SECONDS = 600.0


def _save_sft_state(path: Path, step: int, loss: float, lm, optimizer, scheduler, gen: torch.Generator,
                    spent: dict[str, float] | None = None) -> None:
    write_state(path, TrainState(step, lm.state_dict(), optimizer.state_dict(), scheduler.state_dict(),
                                 {"loss": loss, "generator": gen.get_state(), **(spent or {})}))


def _load_sft_state(path: Path, lm, optimizer, scheduler, gen: torch.Generator) -> tuple[int, float, dict[str, float]]:
    """Restore everything `_save_sft_state` wrote; returns (steps done, last loss, the time spent up to the
    save: `wall_s`, `cpu_s`, absent from a checkpoint written before time was kept)."""
    state, rng = load_checkpoint(path)
    lm.load_state_dict(state.model)
    optimizer.load_state_dict(state.optimizer)
    scheduler.load_state_dict(state.scheduler)
    gen.set_state(state.extra["generator"])
    restore_rng_states(rng)
    return state.step, float(state.extra["loss"]), {k: float(state.extra[k]) for k in ("wall_s", "cpu_s")
                                                      if k in state.extra}


class Spent:
    """Wall-clock and CPU seconds (this process, all its threads) since construction, plus what earlier,
    interrupted processes spent (`carry`)."""

    def __init__(self) -> None:
        self.earlier = {"wall_s": 0.0, "cpu_s": 0.0}
        self.wall0, self.cpu0 = time.monotonic(), time.process_time()

    def carry(self, earlier: dict[str, float]) -> None:
        for key, seconds in earlier.items():
            self.earlier[key] += seconds

    def now(self) -> dict[str, float]:
        return {"wall_s": self.earlier["wall_s"] + time.monotonic() - self.wall0,
                "cpu_s": self.earlier["cpu_s"] + time.process_time() - self.cpu0}


def sft_loss(lm: torch.nn.Module, mb: RolloutBatch, tokens: torch.Tensor | None = None) -> torch.Tensor:
    """Negative log-likelihood of the generated tokens (`mb.response_mask`) of batch `mb`, summed and divided
    by `tokens` (default: `mb`'s own generated tokens, the mean; a micro-batch passes its batch's)."""
    logprobs = generated_logprobs(lm, mb.input_ids, mb.attention_mask, mb.response_mask)  # (b, t)
    mask = mb.response_mask.float()  # (b, t)
    return -(logprobs * mask).sum() / (mask.sum().clamp(min=1.0) if tokens is None else tokens)


def sft_step(lm: torch.nn.Module, params: list[torch.nn.Parameter], optimizer: torch.optim.Optimizer,
             mb: RolloutBatch, micro_batch_rows: int = 0, autocast: torch.dtype | None = None) -> float:
    """One SFT optimizer step on batch `mb` (`params`: what `optimizer` trains, clipped to norm 1); returns
    the loss before the step. `micro_batch_rows` > 0: forwards and backwards of at most that many rows, each
    summed negative log-likelihood divided by the whole batch's generated tokens (gradient accumulation:
    the same step up to float rounding). `autocast`: the forwards' dtype (None: fp32), as the RL update's;
    weights, gradients and AdamW state keep the weights' dtype (fp32 for the tiny family and SmolLM2)."""
    optimizer.zero_grad(set_to_none=True)
    device_type = mb.input_ids.device.type

    def loss_of(part: RolloutBatch, tokens: torch.Tensor | None) -> torch.Tensor:
        with torch.autocast(device_type, dtype=autocast, enabled=autocast is not None):
            return sft_loss(lm, part, tokens)

    if not micro_batch_rows or mb.batch_size <= micro_batch_rows:
        loss = loss_of(mb, None)
        loss.backward()
        total = float(loss.detach())
    else:
        tokens = mb.response_mask.sum().clamp(min=1).float()  # (,): the whole batch's generated tokens
        total = 0.0
        for rows in torch.arange(mb.batch_size).split(micro_batch_rows):
            part = loss_of(mb.select(rows).crop(), tokens)  # its share of the batch's mean
            part.backward()
            total += float(part.detach())
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    optimizer.step()
    return total


def sft_warm_start(
    lm: torch.nn.Module,
    tokenizer,
    chat,
    cfg: TrainConfig,
    device: torch.device,
    progress: Callable[[int, float], object] | None = None,
    checkpoint: Path | None = None,
) -> dict[str, float]:
    """Train `lm` in place for `cfg.sft.steps` steps, forwards under the run's autocast dtype (`model.dtype`,
    as RL's); returns final loss and token counts. With `checkpoint`,
    continue from that file if it exists and save to it every `SFT_CHECKPOINT_EVERY` steps or
    `SFT_CHECKPOINT_SECONDS` of wall time, whichever comes first. The caller
    removes the file once the warm start is saved and must not pass one written under other settings."""
    import agentbench_af

    if cfg.sft.steps <= 0:
        return {"sft_steps": 0}
    spent = Spent()
    env = agentbench_af.make(cfg.env.id, **cfg.env.overrides)
    rng = np.random.default_rng([cfg.warm_start_seed, 1])
    seeds = draw_train_seeds(env, cfg.sft.episodes, rng)
    trajs = demonstration_trajectories(
        cfg.env.id, seeds, tokenizer, chat, cfg.rollout, demonstration_overrides(cfg),
        draws=cfg.sft.demo_draws or 1,
    )
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else chat.end_of_turn_ids[0]
    data = trajectories_to_batch(trajs, cfg.rollout.context_mode, pad)
    params = trainable_parameters(lm)  # every weight, or the LoRA adapters only
    autocast = autocast_dtype(cfg, device)
    optimizer = torch.optim.AdamW(params, lr=cfg.sft.lr, weight_decay=0.0)
    scheduler = sft_scheduler(optimizer, cfg.sft)
    gen = torch.Generator().manual_seed(cfg.warm_start_seed * 1_000_003 + 7)
    lm.train()
    loss_value, start = math.nan, 0
    if checkpoint is not None and Path(checkpoint).exists():
        start, loss_value, earlier = _load_sft_state(Path(checkpoint), lm, optimizer, scheduler, gen)
        spent.carry(earlier)
    last_save = time.monotonic()
    for step in range(start, cfg.sft.steps):
        rows = torch.randint(0, data.batch_size, (min(cfg.sft.batch_size, data.batch_size),), generator=gen)
        loss_value = sft_step(lm, params, optimizer, data.select(rows).crop().to(device), cfg.sft.micro_batch_rows,
                              autocast)
        scheduler.step()
        due = (step + 1) % SFT_CHECKPOINT_EVERY == 0 or time.monotonic() - last_save >= SFT_CHECKPOINT_SECONDS
        if checkpoint is not None and due and step + 1 < cfg.sft.steps:
            _save_sft_state(Path(checkpoint), step + 1, loss_value, lm, optimizer, scheduler, gen, spent.now())
            last_save = time.monotonic()
        if progress is not None:
            progress(step, loss_value)
    cost = spent.now()  # demonstrations and steps, across resumes
    return {
        "sft_steps": cfg.sft.steps,
        "sft_final_loss": loss_value,
        "sft_demo_episodes": len(trajs),
        "sft_demo_success": float(np.mean([t.success for t in trajs])),
        "sft_response_tokens": int(data.response_mask.sum()),
        "sft_wall_s": round(cost["wall_s"], 1),
        "sft_cpu_s": round(cost["cpu_s"], 1),
    }
