"""The RL training loop, top to bottom: warm start, then per step collect -> score -> credit -> update -> log.

Every step reseeds torch and draws its training seeds from (run seed, step), so a run resumed from a
checkpoint continues exactly as an uninterrupted run would; under `rollout.dynamic_sampling` the seeds a
step refills with come from (run seed, step) too (`rollout.dynamic`). The run's bookkeeping lives elsewhere: the
locked run folder, its checks and files in `run_folder`, the warm start and its provenance in
`warm_start`, what the update trains in `learner`, metrics rows and the record in `bookkeeping`. The
record's `bottleneck` holds the Action Bottleneck diagnostic (the headline, with gradients at the policy
of the moment, and the secondary |c| ratio) of the first step's batch (warm-start policy, before any
update) and of one extra batch sampled after the last update.

Under `torchrun` (WORLD_SIZE > 1) the same loop runs on every rank (`train.distributed.ranks`): each rank
collects its contiguous share of the step's prompts with its own sampling stream, credit uses global
batch statistics where a method has them (`distributed_credit`), the update runs under DDP or FSDP2
(`run.parallel`) with global loss denominators, evaluation splits its seeds over the ranks
(`distributed_eval`), and rank 0 alone writes the run folder (`rank_folder`). With minibatches = 1 an
update equals the one-process update on the union of the shares; with more, each optimizer step takes a
slice of every rank's share (the same number of samples as one process, another partition of them).
The generation engine (`rollout.engine`) is built once per run and wraps every update
(`engine.updating`): a vLLM engine then copies the new weights into its running model; each step's row
records `rollout/logprob_mismatch_max`, the engine's log-probs against the trainer's.
Left out: tensor and pipeline parallelism (a policy must fit on one device, or be sharded by FSDP2), and
the vLLM engine under torchrun (one vLLM engine per rank is untested, so the loop refuses it).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np
import torch
from tqdm.auto import tqdm

import agentbench_af
from agentbench_af.config import to_dict
from agentbench_af.credit import credit_view
from agentbench_af.models.forward import logprob_mismatch, score_batch
from agentbench_af.results.record import RunRecord
from agentbench_af.results.snapshot import bottleneck_snapshot, record_bottleneck
from agentbench_af.rollout.batch import RolloutBatch
from agentbench_af.rollout.collect import collect_rollouts
from agentbench_af.rollout.dynamic import DynamicCollection, collect_dynamic
from agentbench_af.rollout.engine import build_engine
from agentbench_af.rollout.seeds import draw_train_seeds, refill_seeds
from agentbench_af.rollout.to_batch import trajectories_to_batch
from agentbench_af.train.bookkeeping.rank_folder import FollowerFolder, run_folder
from agentbench_af.train.bookkeeping.record import protocol, run_record, step_row
from agentbench_af.train.bookkeeping.run_folder import RunFolder
from agentbench_af.train.config import TrainConfig
from agentbench_af.train.device import resolve_device, use_device
from agentbench_af.train.distributed import ranks as dp
from agentbench_af.train.distributed.evaluation import (
    PassStore,
    evaluation_row,
    play_now,
    shared_eval_on_ranks,
)
from agentbench_af.train.distributed.gather_batch import gather_batch
from agentbench_af.train.memory_note import logits_memory_note, vocab_of
from agentbench_af.train.precision_note import lora_bf16_note
from agentbench_af.train.update.learner import Learner, build_learner
from agentbench_af.train.update.step import StepContext, samples_on_policy, score, update
from agentbench_af.train.warm.warm_eval import warm_eval_key, warm_start_eval
from agentbench_af.train.warm.warm_start import prepare_warm_start, warm_start_for

__all__ = ["train", "step_seed", "prepare_warm_start", "resolve_device", "protocol"]


def step_seed(run_seed: int, step: int, stream: int) -> int:
    return int(np.random.SeedSequence([run_seed, stream, step]).generate_state(1)[0])


def train(cfg: TrainConfig, resume: bool = False, show_progress: bool = True, overwrite: bool = False) -> RunRecord:
    """Run (or resume) one training run; returns its record (also written to `<run_dir>/record.json`).
    Under torchrun every rank calls this and gets the record; rank 0 writes it."""
    device, autocast = use_device(cfg)
    dp.check_world(cfg, dp.ranks_from_env())
    if cfg.rollout.engine == "vllm" and dp.ranks_from_env().active:
        raise ValueError("rollout.engine=vllm runs in one process for now; use rollout.engine=transformers under torchrun")
    ranks, device = dp.start(device)
    try:
        with run_folder(cfg, ranks, resume=resume, overwrite=overwrite) as run:
            record = _train(cfg, run, ranks, device, autocast, show_progress and ranks.is_main)
        dp.finish(ranks)  # on success only: a rank that failed must not leave the others waiting here
        return record
    finally:
        dp.stop(ranks)


def snapshot(batch: RolloutBatch, step: int, lm: torch.nn.Module, cfg: TrainConfig, device: torch.device):
    """The diagnostic of a scored batch at the policy `lm` (headline gradients included)."""
    return bottleneck_snapshot(batch, step, lm=lm, temperature=cfg.rollout.temperature, device=device,
                               format_role=cfg.credit.format_role, settings=to_dict(cfg.diagnostic))


def step_trajectories(play: Callable[[list[int]], list], env, cfg: TrainConfig, step: int,
                      ranks: dp.Ranks) -> tuple[list, DynamicCollection | None]:
    """This rank's trajectories of step `step` (its seeds drawn from the run seed and the step; `play` plays a
    list of seeds) and, under `rollout.dynamic_sampling`, how they were drawn (else None). Refills come from a
    disjoint slice per rank of one order of the step's other seeds."""
    seeds = draw_train_seeds(env, cfg.rl.prompts_per_step, np.random.default_rng(step_seed(cfg.run.seed, step, 2)))
    if not cfg.rollout.dynamic_sampling:
        return play(dp.share(seeds, ranks)), None
    limit = (cfg.rollout.dynamic_sampling_max_rounds - 1) * cfg.rl.prompts_per_step
    refills = refill_seeds(env, seeds, limit, np.random.default_rng(step_seed(cfg.run.seed, step, 4)),
                           ranks.rank, ranks.world_size)
    drawn = collect_dynamic(play, dp.share(seeds, ranks), refills, cfg.rollout.dynamic_sampling_max_rounds)
    return drawn.trajs, drawn


def _notes_before_rl(cfg: TrainConfig, lm: torch.nn.Module, ranks: dp.Ranks, autocast: torch.dtype | None) -> list[str]:
    """The one-line notes rank 0 writes before RL: one forward's logits memory (one process only), a bf16 LoRA
    update."""
    if not ranks.is_main:
        return []
    notes = [None if ranks.active else logits_memory_note(cfg, vocab_of(lm)), lora_bf16_note(cfg, autocast)]
    return [n for n in notes if n]


def _train(cfg: TrainConfig, run: RunFolder | FollowerFolder, ranks: dp.Ranks, device: torch.device,
           autocast: torch.dtype | None, show_progress: bool) -> RunRecord:
    # the other ranks wait for rank 0's warm start (built, reused or branched from)
    warm = dp.broadcast_from_main(warm_start_for(cfg, run.dir, device, show_progress) if ranks.is_main else None,
                                  ranks, "warm start")
    learner = build_learner(cfg, warm.path, device, ranks)
    policy = learner.policy
    for note in _notes_before_rl(cfg, policy.lm, ranks, autocast):
        tqdm.write(note, file=sys.stderr)
    engine = build_engine(cfg.rollout, policy.lm, policy.pad_token_id, autocast, cfg.run.seed)
    env = agentbench_af.make(cfg.env.id, **cfg.env.overrides)
    on_policy = samples_on_policy(engine, learner)  # its batches may be scored by the update's forward

    def evaluate(step: int, passes: PassStore = play_now) -> dict:
        return evaluation_row(engine, policy.tokenizer, policy.chat, cfg, ranks, step,
                              dp.rank_seed(step_seed(cfg.run.seed, step, 3), ranks), show_progress, passes)

    def play(seeds: list[int]) -> list:
        return collect_rollouts(engine, policy.tokenizer, policy.chat, cfg.env.id, seeds, cfg.rollout, cfg.env.overrides)

    def collect(step: int) -> tuple[RolloutBatch, list, DynamicCollection | None]:
        """This rank's rollouts of step `step` (seeded by run seed, step and rank), before scoring, and how
        dynamic sampling drew them (None when it is off)."""
        torch.manual_seed(dp.rank_seed(step_seed(cfg.run.seed, step, 0), ranks))
        trajs, drawn = step_trajectories(play, env, cfg, step, ranks)
        batch = trajectories_to_batch(trajs, cfg.rollout.context_mode, policy.pad_token_id)
        return credit_view(batch, cfg.credit), trajs, drawn  # roles as credit counts them

    def note_warm_start(batch: RolloutBatch) -> None:
        """The scored warm-start batch's diagnostic (step 0, before the update, which rescores it identically)."""
        whole = gather_batch(score(learner, batch, cfg, device), ranks, policy.pad_token_id)
        if whole is not None:
            progress.bottleneck_warm_start = snapshot(whole, 0, policy.lm, cfg, device).to_dict()

    restored = run.restore(learner)
    engine.load_weights(policy.lm)  # a restored checkpoint's weights
    if restored is None:
        key = warm_eval_key(cfg, str(autocast))
        restored = 0, run.begin(
            lambda: shared_eval_on_ranks(warm.path, key, lambda: evaluate(0), ranks) if ranks.active
            else warm_start_eval(warm.path, key, lambda passes: evaluate(0, passes), tqdm.write))
    start, progress = restored
    bar = tqdm(range(start, cfg.rl.steps), desc=f"{cfg.method} {cfg.env.id}", disable=not show_progress,
               initial=start, total=cfg.rl.steps)
    for step in bar:
        t0, c0 = time.time(), time.process_time()
        batch, trajs, drawn = collect(step)
        t_rollout = time.time() - t0
        if step == 0:
            note_warm_start(batch)
        # step 0 keeps the scoring pass, so the warm-start diagnostic reads the numbers the update trains on
        ctx = StepContext(torch.Generator().manual_seed(step_seed(cfg.run.seed, step, 1)), device, autocast, ranks,
                          on_policy=on_policy and step > 0)
        with engine.updating(policy.lm):  # the engine samples from the new weights afterwards
            scored, update_metrics = update(learner, batch, cfg, ctx)
            learner.parallel.after_update()
        learner.scheduler.step()
        done = step + 1
        row = step_metrics(done, batch, scored, trajs, t_rollout, time.time() - t0, learner, update_metrics, ranks)
        if drawn is not None:
            row.update(sampling_metrics(drawn, ranks))
        run.save_rollouts(scored, done)
        if done % cfg.eval.every == 0 or done == cfg.rl.steps:
            row["eval"] = evaluate(done)
        run.log(row)
        bar.set_postfix(success=f"{row['rollout_success']:.2f}", ret=f"{row['rollout_return']:.2f}")
        progress.add_step(row, time.time() - t0, time.process_time() - c0)
        run.checkpoint(done, learner, progress)
    bar.close()

    # one more batch with the same recipe (the one a step cfg.rl.steps + 1 would sample) for the final ratio
    final_batch = score_batch(policy.lm, collect(cfg.rl.steps)[0], cfg.rollout.temperature, device)
    final = progress.curve[-1] if progress.curve else evaluate(cfg.rl.steps)
    getattr(engine, "close", lambda: None)()  # a vLLM engine frees its memory
    final_whole = gather_batch(final_batch, ranks, policy.pad_token_id)  # rank 0 writes the record, all return it
    record = None if final_whole is None else run.finish(policy, run_record(
        cfg, policy.num_params, env, warm, progress, final,
        record_bottleneck(progress.bottleneck_warm_start, snapshot(final_whole, cfg.rl.steps, policy.lm, cfg, device)), ranks.world_size))
    return dp.broadcast_from_main(record, ranks, "run record")


def step_metrics(done: int, sampled: RolloutBatch, batch: RolloutBatch, trajs: list, t_rollout: float,
                 t_step: float, learner: Learner, update_metrics: dict, ranks: dp.Ranks) -> dict:
    """The step's metrics row over all ranks, with the engine's log-probs against the trainer's."""
    row = step_row(done, batch, trajs, t_rollout, t_step, float(learner.scheduler.get_last_lr()[0]),
                   dp.reduce_metrics(update_metrics, ranks))
    row = dp.reduce_row(row, sum(len(tr.turns) for tr in trajs), ranks)
    mismatch = logprob_mismatch(sampled.old_logprobs, batch.old_logprobs, batch.response_mask)
    row["rollout/logprob_mismatch_max"] = float(dp.all_reduce(torch.tensor([mismatch], dtype=torch.float64),
                                                              ranks, "max")[0])
    return row


def sampling_metrics(drawn: DynamicCollection, ranks: dp.Ranks) -> dict[str, float]:
    """Dynamic sampling's counts over every rank: groups collected and kept, the most rounds a rank ran, and
    the success rate over every collected trajectory (the kept groups' is `rollout_success`)."""
    counts = dp.all_reduce(torch.tensor([drawn.drawn, drawn.kept, drawn.played, drawn.successes], dtype=torch.float64),
                           ranks)
    rounds = dp.all_reduce(torch.tensor([drawn.rounds], dtype=torch.float64), ranks, "max")
    return {"rollout/groups_drawn": int(counts[0]), "rollout/groups_kept": int(counts[1]),
            "rollout/sampling_rounds": int(rounds[0]), "rollout/drawn_success": float(counts[3] / counts[2].clamp(min=1))}
