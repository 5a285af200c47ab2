"""The RL training loop, top to bottom: warm start, then per step collect -> score -> credit -> update -> log.

Every step reseeds torch and draws its training seeds from (run seed, step), so a run resumed from a
checkpoint continues exactly as an uninterrupted run would. The run's bookkeeping lives elsewhere: the
locked run folder, its checks and files in `run_folder`, the warm start and its provenance in
`warm_start`, what the update trains in `learner`, metrics rows and the record in `bookkeeping`. The
record's `bottleneck` holds the Action Bottleneck diagnostic (the headline, with gradients at the policy
of the moment, and the secondary |c| ratio) of the first step's batch (warm-start policy, before any
update) and of one extra batch sampled after the last update.
Left out: multi-GPU data parallelism (one device per run; sweeps parallelise runs).
"""

from __future__ import annotations

import time

import numpy as np
import torch
from tqdm.auto import tqdm

import agentbench_af
from agentbench_af.credit import compute_advantages, compute_token_weights, credit_view
from agentbench_af.evaluate.evaluate import evaluate_policy
from agentbench_af.models.forward import score_batch
from agentbench_af.results.record import RunRecord
from agentbench_af.results.snapshot import record_bottleneck
from agentbench_af.rollout.batch import RolloutBatch
from agentbench_af.rollout.collect import collect_rollouts
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.rollout.seeds import draw_train_seeds
from agentbench_af.rollout.to_batch import trajectories_to_batch
from agentbench_af.train.bookkeeping import diagnostic_snapshot, protocol, run_record, step_row
from agentbench_af.train.config import TrainConfig
from agentbench_af.train.device import resolve_device, use_device
from agentbench_af.train.learner import build_learner
from agentbench_af.train.run_folder import RunFolder
from agentbench_af.train.update import UpdateInputs, ppo_update
from agentbench_af.train.warm_eval import shared_warm_eval, warm_eval_key
from agentbench_af.train.warm_start import prepare_warm_start, warm_start_for

__all__ = ["train", "step_seed", "prepare_warm_start", "resolve_device", "protocol"]


def step_seed(run_seed: int, step: int, stream: int) -> int:
    return int(np.random.SeedSequence([run_seed, stream, step]).generate_state(1)[0])


def train(cfg: TrainConfig, resume: bool = False, show_progress: bool = True, overwrite: bool = False) -> RunRecord:
    """Run (or resume) one training run; returns its record (also written to `<run_dir>/record.json`)."""
    with RunFolder(cfg, resume=resume, overwrite=overwrite) as run:
        device, autocast = use_device(cfg)
        warm = warm_start_for(cfg, run.dir, device, show_progress)
        learner = build_learner(cfg, warm.path, device)
        policy = learner.policy
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
            batch = trajectories_to_batch(trajs, cfg.rollout.context_mode, policy.pad_token_id)
            return credit_view(batch, cfg.credit), trajs

        start, progress = run.restore(learner) or (0, None)
        if progress is None:
            progress = run.begin(lambda: shared_warm_eval(warm.path, warm_eval_key(cfg, str(autocast)), lambda: evaluate(0)))
        bar = tqdm(range(start, cfg.rl.steps), desc=f"{cfg.method} {cfg.env.id}", disable=not show_progress,
                   initial=start, total=cfg.rl.steps)
        for step in bar:
            t0 = time.time()
            batch, trajs = collect(step)
            t_rollout = time.time() - t0
            # recompute old log-probs with the training forward pass (same numerics as the update)
            batch = score_batch(policy.lm, batch, cfg.rollout.temperature, device, learner.value_head,
                                learner.ref_lm, learner.critic)
            if step == 0:  # the warm-start policy's batch, before any update (kept in checkpoints)
                progress.bottleneck_warm_start = diagnostic_snapshot(cfg, policy.lm, device, batch, 0).to_dict()
            advantage = compute_advantages(batch, cfg.credit)
            weights = compute_token_weights(batch, cfg.credit)
            gen = torch.Generator().manual_seed(step_seed(cfg.run.seed, step, 1))
            update_metrics = ppo_update(
                policy.lm, learner.value_head, learner.optimizer,
                UpdateInputs(batch, advantage.advantages, advantage.returns, weights), cfg.loss, cfg.rl.epochs,
                cfg.rl.minibatches, cfg.rollout.temperature, gen, device, autocast,
                detach_critic=cfg.rl.critic == "detached", critic=learner.critic,
            )
            learner.scheduler.step()
            done = step + 1
            row = step_row(done, batch, trajs, t_rollout, time.time() - t0, learner.scheduler.get_last_lr()[0],
                           update_metrics)
            run.save_rollouts(batch, done)
            if done % cfg.eval.every == 0 or done == cfg.rl.steps:
                row["eval"] = evaluate(done)
            run.log(row)
            bar.set_postfix(success=f"{row['rollout_success']:.2f}", ret=f"{row['rollout_return']:.2f}")
            progress.add_step(row, time.time() - t0)
            run.checkpoint(done, learner, progress)
        bar.close()

        # one more batch with the same recipe (the one a step cfg.rl.steps + 1 would sample) for the final ratio
        final_batch, _ = collect(cfg.rl.steps)
        final_batch = score_batch(policy.lm, final_batch, cfg.rollout.temperature, device)
        last = diagnostic_snapshot(cfg, policy.lm, device, final_batch, cfg.rl.steps)
        bottleneck = record_bottleneck(progress.bottleneck_warm_start, last)
        final = progress.curve[-1] if progress.curve else evaluate(cfg.rl.steps)
        return run.finish(policy, run_record(cfg, policy.num_params, env, warm, progress, final, bottleneck))
