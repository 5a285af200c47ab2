"""Every registered credit method and policy loss on a synthetic batch, by one process on all of it or by
each of two gloo ranks on its half of the prompts (`test_data_parallel_methods`). No model: the current
log-probs are a fixed function of the old ones, so the loss's gradient with respect to them is compared."""

from __future__ import annotations

import dataclasses
import os
import pickle
from pathlib import Path

import torch
import torch.distributed as dist

from agentbench_af.credit import CreditConfig
from agentbench_af.credit.reduce import batch_reduce
from agentbench_af.credit.registry import PolicyLossOutput, register_policy_loss, register_weighting
from agentbench_af.rollout.batch import RolloutBatch
from agentbench_af.train.distributed.credit import rank_advantages, rank_token_weights
from agentbench_af.train.distributed.ranks import SINGLE, Ranks, UpdateSync
from agentbench_af.train.update.loss import LossConfig, policy_loss

PER_TRAJ = ("traj_group", "traj_return", "traj_success", "turn_obs_key")


@register_weighting("test-dp-entropy-share", source="a test plugin with a batch statistic")
def entropy_share(batch: RolloutBatch, cfg: CreditConfig) -> torch.Tensor:
    """A plugin weighting with a batch statistic: entropy over the batch's mean entropy."""
    mask = batch.response_mask
    ent = batch.entropy.double()[mask]  # (M,)
    n, total = batch_reduce().sum(torch.stack([ent.new_tensor(float(ent.numel())), ent.sum()]))
    return torch.where(mask, batch.entropy / float(total / n.clamp(min=1)), torch.zeros_like(batch.entropy))


@register_policy_loss("test-dp-centred", source="a test plugin with a batch statistic")
def centred(logprobs, old_logprobs, advantages, weights, mask, cfg, reduce) -> PolicyLossOutput:
    """A plugin policy loss with a batch statistic: -(A - batch mean A) log p."""
    a = advantages.detach().double()[mask.bool()]  # (M,)
    n, total = reduce.sum(torch.stack([a.new_tensor(float(a.numel())), a.sum()]))
    mean = float(total / n.clamp(min=1))
    return PolicyLossOutput(weights * -(advantages - mean) * logprobs, {})


def share(batch: RolloutBatch, ranks: Ranks) -> tuple[RolloutBatch, torch.Tensor]:
    """This rank's contiguous block of the batch's groups (its trajectories, remapped to 0..), and its rows."""
    groups = torch.unique(batch.traj_group)  # sorted
    per = len(groups) // ranks.world_size
    mine = groups[ranks.rank * per:(ranks.rank + 1) * per]
    trajs = torch.nonzero(torch.isin(batch.traj_group, mine)).flatten()  # (N_r,)
    rows = torch.nonzero(torch.isin(batch.sample_traj, trajs)).flatten()  # (B_r,)
    part = batch.select(rows)
    remap = torch.full((batch.num_trajectories,), -1, dtype=torch.long)
    remap[trajs] = torch.arange(len(trajs))
    updates = {name: getattr(batch, name)[trajs] for name in PER_TRAJ if getattr(batch, name) is not None}
    return dataclasses.replace(part, sample_traj=remap[part.sample_traj], **updates), rows


def methods() -> list[tuple[str, CreditConfig, LossConfig]]:
    """(name, credit, loss) for every registered estimator, weighting and policy loss (the others default),
    installed plugins' included (loaded here, so that every process lists the same methods)."""
    from agentbench_af.credit import ADVANTAGE_ESTIMATORS, POLICY_LOSSES, TOKEN_WEIGHTINGS
    from agentbench_af.plugins import CREDIT_GROUP, load_entry_points

    load_entry_points(CREDIT_GROUP)

    out = [(f"estimator-{n}", CreditConfig(estimator=n), LossConfig()) for n in ADVANTAGE_ESTIMATORS]
    out += [(f"weighting-{n}", CreditConfig(weighting=n), LossConfig()) for n in TOKEN_WEIGHTINGS]
    for n, spec in POLICY_LOSSES.items():
        loss = LossConfig(policy=n, agg=spec.agg or "token-mean", clip_cov_ratio=0.1, kl_cov_ratio=0.1,
                          cov_clip_low=0.2)  # shares large enough to pick tokens in a small batch
        out.append((f"loss-{n}", CreditConfig(), loss))
    return out


def run(batch: RolloutBatch, ranks: Ranks) -> dict[str, dict[str, torch.Tensor]]:
    """Per method: advantages, weights and d loss / d logprobs of this rank's rows (all rows on one process)."""
    part, rows = share(batch, ranks) if ranks.active else (batch, torch.arange(batch.batch_size))
    results = {"rows": {"rows": rows}}
    for name, credit, loss_cfg in methods():
        adv = rank_advantages(part, credit, ranks).advantages  # (B_r, T)
        weights = rank_token_weights(part, credit, ranks)  # (B_r, T)
        logprobs = (part.old_logprobs + 0.3 * torch.sin(7.0 * part.old_logprobs)).requires_grad_(True)  # (B_r, T)
        mask = part.response_mask
        denom = UpdateSync(ranks).denominator(mask, loss_cfg.agg) if ranks.active else None
        entropy = part.entropy + 0.5 * torch.cos(3.0 * part.old_logprobs)  # (B_r, T): the current policy's
        policy_loss(logprobs, part.old_logprobs, adv, weights, mask, loss_cfg, denom, entropy=entropy).backward()
        results[name] = {"advantages": adv, "weights": weights, "grad": logprobs.grad / ranks.world_size}
    return results


def reference(batch: RolloutBatch) -> dict[str, dict[str, torch.Tensor]]:
    return run(batch, SINGLE)


def rank_main(rank: int, world: int, port: int, data: str, out_dir: str) -> None:
    """Entry point of one spawned rank: results to out_dir/rank-<r>.pt."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        batch = pickle.loads(Path(data).read_bytes())
        torch.save(run(batch, Ranks(rank, world, rank)), Path(out_dir) / f"rank-{rank}.pt")
    finally:
        dist.destroy_process_group()
