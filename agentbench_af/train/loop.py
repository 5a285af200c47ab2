"""The RL training loop, top to bottom: warm start, then per step collect -> credit -> update -> log.

Every step reseeds torch and draws its training seeds from (run seed, step), so a run resumed from a
checkpoint continues exactly as an uninterrupted run would. Checkpoints, metrics and the record are
written atomically. The record's `bottleneck` holds the Action Bottleneck diagnostic (the headline, with
gradients at the policy of the moment, and the secondary |c| ratio) of the first step's batch (warm-start
policy, before any update) and of one extra batch sampled after the last update.
Left out: multi-GPU data parallelism (one device per run; sweeps parallelise runs).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import yaml
from tqdm.auto import tqdm

import agentbench_af
from agentbench_af.config import ConfigError, config_hash, from_dict, to_dict
from agentbench_af.credit import compute_advantages, compute_token_weights, credit_view
from agentbench_af.evaluate.evaluate import evaluate_policy
from agentbench_af.formats.roles import ROLE_NAMES
from agentbench_af.io import append_jsonl, atomic_write_text, read_jsonl, rewrite_jsonl
from agentbench_af.models.forward import score_batch
from agentbench_af.models.policy import Policy, build_policy
from agentbench_af.results.record import RunRecord, git_commit, package_versions
from agentbench_af.results.rollout_store import save_rollouts, select_groups
from agentbench_af.results.snapshot import bottleneck_snapshot, record_bottleneck
from agentbench_af.rollout.batch import RolloutBatch
from agentbench_af.rollout.collect import collect_rollouts
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.rollout.seeds import draw_train_seeds
from agentbench_af.rollout.to_batch import trajectories_to_batch
from agentbench_af.train.checkpoint import (
    TrainState,
    latest_checkpoint,
    load_checkpoint,
    restore_rng_states,
    save_checkpoint,
)
from agentbench_af.train.config import TrainConfig
from agentbench_af.train.critic import SeparateCritic
from agentbench_af.train.sft import sft_warm_start, warmup_lambda
from agentbench_af.train.update import UpdateInputs, ppo_update
from agentbench_af.train.warm_eval import shared_warm_eval, warm_eval_key


@dataclass
class RunContext:
    cfg: TrainConfig
    run_dir: Path
    device: torch.device
    dtype: torch.dtype | None
    extra: dict = field(default_factory=dict)


def resolve_device(cfg: TrainConfig) -> tuple[torch.device, torch.dtype | None]:
    name = cfg.run.device
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"run.device={cfg.run.device!r} but no CUDA device is available")
    device = torch.device(name)
    want_bf16 = cfg.model.dtype == "bfloat16" or (cfg.model.dtype == "auto" and device.type == "cuda")
    return device, (torch.bfloat16 if want_bf16 else None)


def step_seed(run_seed: int, step: int, stream: int) -> int:
    return int(np.random.SeedSequence([run_seed, stream, step]).generate_state(1)[0])


def prepare_warm_start(cfg: TrainConfig, out_dir: Path, device: torch.device, show_progress: bool = True) -> Path:
    """Build the tiny policy and SFT it (or load `model.path`), then save it to `out_dir`; idempotent."""
    if (out_dir / "policy.json").exists():
        return out_dir
    torch.manual_seed(cfg.run.seed)
    if cfg.model.path:
        policy = Policy.load(cfg.model.path, device)
    else:
        policy = build_policy(cfg.model.name, [cfg.env.id], cfg.model.vocab_size, cfg.model.tokenizer_episodes, cfg.run.seed)
    policy.lm.to(device)
    bar = tqdm(total=cfg.sft.steps, desc=f"warm start {cfg.env.id}", disable=not show_progress, leave=False)
    stats = sft_warm_start(policy.lm, policy.tokenizer, policy.chat, cfg, device,
                           progress=lambda s, loss: (bar.update(1), bar.set_postfix(loss=f"{loss:.3f}")))
    bar.close()
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    policy.save(tmp)
    atomic_write_text(tmp / "warm_start.yaml", yaml.safe_dump({"sft": stats, "config": to_dict(cfg)}, sort_keys=False))
    if tmp.exists() and not out_dir.exists():
        tmp.replace(out_dir)
    return out_dir


def _role_counts(batch) -> dict[str, int]:
    roles = batch.roles[batch.response_mask]
    return {ROLE_NAMES[r]: int((roles == r).sum()) for r in ROLE_NAMES if r != 0}


def _same_run(saved_config: Path, cfg: TrainConfig) -> bool:
    """Whether the config saved in a run directory describes the same experiment as `cfg`."""
    try:
        saved = from_dict(TrainConfig, yaml.safe_load(saved_config.read_text()))
    except (OSError, ConfigError, yaml.YAMLError):
        return False
    return config_hash(saved) == config_hash(cfg) and saved.run.seed == cfg.run.seed


def train(cfg: TrainConfig, resume: bool = False, show_progress: bool = True) -> RunRecord:
    """Run (or resume) one training run; returns its record (also written to `<run_dir>/record.json`)."""
    run_dir = Path(cfg.run.out_dir) / cfg.run_name
    if (run_dir / "record.json").exists() and not resume:
        raise FileExistsError(f"{run_dir} already holds a finished run (use another run.name or --resume)")
    if run_dir.exists() and latest_checkpoint(run_dir) is not None and not resume:
        raise FileExistsError(f"{run_dir} holds a checkpoint: pass --resume to continue it")
    if resume and latest_checkpoint(run_dir) is not None and not _same_run(run_dir / "config.yaml", cfg):
        raise FileExistsError(f"{run_dir} was started with a different config (its config.yaml): resume it "
                              "with the same settings, or use another run.name")
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(run_dir / "config.yaml", yaml.safe_dump(to_dict(cfg), sort_keys=False))
    if cfg.run.threads > 0:
        torch.set_num_threads(cfg.run.threads)
    device, autocast = resolve_device(cfg)
    start_time = time.time()

    warm_dir = Path(cfg.run.init_from) if cfg.run.init_from else prepare_warm_start(cfg, run_dir / "warm_start", device, show_progress)
    policy = Policy.load(warm_dir, device)
    separate = cfg.needs_value_head and cfg.rl.critic == "separate"
    value_head = policy.ensure_value_head() if cfg.needs_value_head and not separate else None
    critic = SeparateCritic(policy.lm) if separate else None  # copied from the warm start, before any update
    needs_ref = cfg.loss.kl_coef > 0 or cfg.credit.energy_source == "ref"
    ref_lm = copy.deepcopy(policy.lm).eval().requires_grad_(False) if needs_ref else None
    groups = [{"params": list(policy.lm.parameters()), "lr": cfg.rl.lr}]
    for module in (value_head, critic):
        if module is not None:
            groups.append({"params": list(module.parameters()), "lr": cfg.rl.critic_lr})
    optimizer = torch.optim.AdamW(groups, weight_decay=cfg.rl.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_lambda(cfg.rl.warmup_steps))
    engine = TransformersEngine(policy.lm, policy.pad_token_id, cfg.rollout.max_batch_size)
    env = agentbench_af.make(cfg.env.id, **cfg.env.overrides)

    def evaluate(step: int) -> dict:
        torch.manual_seed(step_seed(cfg.run.seed, step, 3))
        result, _ = evaluate_policy(engine, policy.tokenizer, policy.chat, cfg.env.id, cfg.eval.episodes,
                                    cfg.eval.temperature, cfg.rollout, cfg.env.overrides)
        return {"step": step, **result.to_dict()}

    def collect(step: int) -> tuple[RolloutBatch, list]:
        """The rollouts of step `step` (seeded by run seed and step), before scoring; roles as credit counts them."""
        torch.manual_seed(step_seed(cfg.run.seed, step, 0))
        seeds = draw_train_seeds(env, cfg.rl.prompts_per_step, np.random.default_rng(step_seed(cfg.run.seed, step, 2)))
        trajs = collect_rollouts(engine, policy.tokenizer, policy.chat, cfg.env.id, seeds, cfg.rollout,
                                 cfg.env.overrides)
        return credit_view(trajectories_to_batch(trajs, cfg.rollout.context_mode, policy.pad_token_id), cfg.credit), trajs

    def snapshot(batch: RolloutBatch, step: int):
        """The diagnostic of a scored batch at the current policy (headline gradients included)."""
        return bottleneck_snapshot(batch, step, lm=policy.lm, temperature=cfg.rollout.temperature, device=device,
                                   format_role=cfg.credit.format_role, settings=to_dict(cfg.diagnostic))

    start, extra = 0, {"curve": [], "tokens_by_role": {}, "wall_time_s": 0.0, "warm_start_success": None}
    ckpt = latest_checkpoint(run_dir) if resume else None
    if ckpt is not None:
        state, rng = load_checkpoint(ckpt)
        policy.lm.load_state_dict(state.model["lm"])
        if value_head is not None:
            value_head.load_state_dict(state.model["value_head"])
        if critic is not None:
            critic.load_state_dict(state.model["critic"])
        optimizer.load_state_dict(state.optimizer)
        scheduler.load_state_dict(state.scheduler)
        restore_rng_states(rng)
        start, extra = state.step, state.extra
        rewrite_jsonl(run_dir / "metrics.jsonl", [r for r in read_jsonl(run_dir / "metrics.jsonl") if r["step"] <= start])
    else:
        (run_dir / "metrics.jsonl").unlink(missing_ok=True)
        extra["warm_start_time_s"] = time.time() - start_time
        first = shared_warm_eval(warm_dir, warm_eval_key(cfg, str(autocast)), lambda: evaluate(0))
        extra["curve"].append(first)
        extra["warm_start_success"] = first["success"]
        extra["wall_time_s"] = time.time() - start_time
        append_jsonl(run_dir / "metrics.jsonl", {"step": 0, "eval": first})

    bar = tqdm(range(start, cfg.rl.steps), desc=f"{cfg.method} {cfg.env.id}", disable=not show_progress,
               initial=start, total=cfg.rl.steps)
    for step in bar:
        t0 = time.time()
        batch, trajs = collect(step)
        t_rollout = time.time() - t0
        # recompute old log-probs with the training forward pass (same numerics as the update)
        batch = score_batch(policy.lm, batch, cfg.rollout.temperature, device, value_head, ref_lm, critic)
        if step == 0:  # the warm-start policy's batch, before any update (kept in checkpoints)
            extra["bottleneck_warm_start"] = snapshot(batch, 0).to_dict()
        advantage = compute_advantages(batch, cfg.credit)
        weights = compute_token_weights(batch, cfg.credit)
        gen = torch.Generator().manual_seed(step_seed(cfg.run.seed, step, 1))
        update_metrics = ppo_update(
            policy.lm, value_head, optimizer, UpdateInputs(batch, advantage.advantages, advantage.returns, weights),
            cfg.loss, cfg.rl.epochs, cfg.rl.minibatches, max(cfg.rollout.temperature, 1e-6), gen, device, autocast,
            detach_critic=cfg.rl.critic == "detached", critic=critic,
        )
        scheduler.step()
        done = step + 1
        counts = _role_counts(batch)
        for role, n in counts.items():
            extra["tokens_by_role"][role] = extra["tokens_by_role"].get(role, 0) + n
        row = {
            "step": done,
            "rollout_success": float(batch.traj_success.float().mean()),
            "rollout_return": float(batch.traj_return.mean()),
            "rollout_valid_rate": float(np.mean([t.valid for tr in trajs for t in tr.turns] or [0.0])),
            "response_tokens": int(batch.response_mask.sum()),
            "tokens_by_role": counts,
            "time_rollout_s": t_rollout,
            "time_step_s": time.time() - t0,
            "lr": scheduler.get_last_lr()[0],
            **update_metrics,
        }
        if cfg.run.save_rollouts_every and done % cfg.run.save_rollouts_every == 0:
            save_rollouts(select_groups(batch, cfg.run.rollout_sample_groups), run_dir / "rollouts" / f"step-{done:06d}.pt", done)
        if done % cfg.eval.every == 0 or done == cfg.rl.steps:
            row["eval"] = evaluate(done)
            extra["curve"].append(row["eval"])
        append_jsonl(run_dir / "metrics.jsonl", row)
        bar.set_postfix(success=f"{row['rollout_success']:.2f}", ret=f"{row['rollout_return']:.2f}")
        extra["wall_time_s"] += time.time() - t0
        if done % cfg.run.checkpoint_every == 0 or done == cfg.rl.steps:
            model_state = {"lm": policy.lm.state_dict(),
                           "value_head": value_head.state_dict() if value_head is not None else None,
                           "critic": critic.state_dict() if critic is not None else None}
            save_checkpoint(run_dir, TrainState(done, model_state, optimizer.state_dict(), scheduler.state_dict(), extra))
    bar.close()

    # one more batch with the same recipe (the one a step cfg.rl.steps + 1 would sample) for the final ratio
    final_batch, _ = collect(cfg.rl.steps)
    final_batch = score_batch(policy.lm, final_batch, cfg.rollout.temperature, device)
    bottleneck = record_bottleneck(extra.get("bottleneck_warm_start"), snapshot(final_batch, cfg.rl.steps))
    final = extra["curve"][-1] if extra["curve"] else evaluate(cfg.rl.steps)
    policy.save(run_dir / "final_policy")
    record = RunRecord(
        env_id=cfg.env.id, method=cfg.method, model=cfg.model.path or cfg.model.name, model_params=policy.num_params,
        seed=cfg.run.seed, config_hash=config_hash(cfg), config=to_dict(cfg),
        protocol=protocol(cfg, env), final_success=final["success"],
        final_metrics={k: v for k, v in final.items() if k != "step"}, warm_start_success=extra["warm_start_success"],
        curve=extra["curve"], tokens_by_role=extra["tokens_by_role"],
        wall_time_s=extra["wall_time_s"], bottleneck=bottleneck,
        git_commit=git_commit(), versions=package_versions(),
    )
    record.save(run_dir)
    return record


def protocol(cfg: TrainConfig, env) -> dict:
    lo, _ = env.variant.eval_seeds
    return {
        "eval_episodes": cfg.eval.episodes,
        "eval_temperature": cfg.eval.temperature,
        "eval_seeds": [lo, lo + cfg.eval.episodes],
        "train_seeds": list(env.variant.train_seeds),
        "rl_steps": cfg.rl.steps,
        "prompts_per_step": cfg.rl.prompts_per_step,
        "group_size": cfg.rollout.group_size,
        "rollout_temperature": cfg.rollout.temperature,
        "context_mode": cfg.rollout.context_mode,
        "max_new_tokens": cfg.rollout.max_new_tokens,
        "max_turns": getattr(env.variant, "max_turns", None),
        "sft_steps": cfg.sft.steps,  # a shared warm start is built with the run's own sft settings
        "catalogue": getattr(env, "catalogue_name", None),
    }
