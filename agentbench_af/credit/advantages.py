"""Built-in advantage estimators: gae, grpo, rloo, gigpo-step. Each is `fn(batch, cfg) -> AdvantageOutput`.

Registered in the order the tables list their methods: ppo (gae, needs a critic), grpo, rloo (need
groups of two or more rollouts), gigpo (gigpo-step, needs step groups and groups).

- grpo: a trajectory's return, normalised within its group (`normalise_in_groups`: Bessel-corrected std,
  float64 statistics; groups of one and groups whose returns are all equal get exactly 0), broadcast to
  every generated token of the trajectory's samples.
- rloo: R_i minus the mean of the other returns of its group (groups of one, and groups whose returns are
  all equal, get exactly 0; float64); not std-normalised.
- gae: token-level GAE over a trajectory's generated tokens in generation order (samples by
  sample_order, then position), rewards from token_rewards, values from batch.values; returns = A + V.
  The last generated token of a trajectory is terminal (V_next = 0), also for truncated episodes.
  With cfg.gae_whiten (default) the advantages are then whitened over all generated tokens of the batch
  (`reduce.whiten`: over every rank's tokens under data parallelism); the returns are not.
- gigpo-step: GiGPO (arXiv 2505.10978): A = A_episode (grpo) + omega * A_step. Turns of trajectories of
  one group with the same observation key form a step group; A_step is the discounted (cfg.gamma, per
  turn) return from that turn, normalised within its step group like grpo.
  Simplified: anchor states are matched by the exact key in turn_obs_key (no similarity matching);
  a turn's reward is the sum of its token_rewards (a turn with no generated token carries none);
  key -1 marks a padded (absent) turn; the paper's default gamma is 0.95, ours is cfg.gamma (1.0).
Left out: whitening for the other estimators (grpo and gigpo-step normalise in groups), reward shaping and KL-in-reward penalties.
"""

from __future__ import annotations

import torch

from agentbench_af.credit.config import CreditConfig
from agentbench_af.credit.groups import (
    broadcast_trajectory,
    compact_ids,
    group_all_equal,
    group_sum,
    normalise_in_groups,
    trajectory_token_order,
)
from agentbench_af.credit.reduce import whiten
from agentbench_af.credit.registry import AdvantageOutput, Needs, register_advantage
from agentbench_af.rollout.batch import RolloutBatch


@register_advantage("gae", method="ppo", needs=Needs(critic=True), source="GAE, arXiv 1506.02438; PPO, arXiv 1707.06347")
def gae(batch: RolloutBatch, cfg: CreditConfig) -> AdvantageOutput:
    if batch.values is None:
        raise ValueError(
            "estimator 'gae' needs critic values, but batch.values is None (enable the value head)"
        )
    row, col, traj, rank = trajectory_token_order(batch)  # (M,) each
    advantages = torch.zeros_like(batch.old_logprobs, dtype=torch.float32)  # (B, T)
    returns = torch.zeros_like(advantages)  # (B, T)
    if row.numel() == 0:
        return AdvantageOutput(advantages, returns)
    n_traj, length = batch.num_trajectories, int(rank.max()) + 1
    device = advantages.device
    rewards = torch.zeros(n_traj, length, device=device)  # (N, L)
    values = torch.zeros(n_traj, length, device=device)  # (N, L)
    valid = torch.zeros(n_traj, length, dtype=torch.bool, device=device)  # (N, L)
    rewards[traj, rank] = batch.token_rewards[row, col].float()
    values[traj, rank] = batch.values[row, col].float()
    valid[traj, rank] = True
    adv = torch.zeros(n_traj, length, device=device)  # (N, L)
    running = torch.zeros(n_traj, device=device)  # (N,)
    next_value = torch.zeros(n_traj, device=device)  # (N,)
    discount = cfg.gamma * cfg.gae_lambda
    for step in range(length - 1, -1, -1):
        delta = rewards[:, step] + cfg.gamma * next_value - values[:, step]  # (N,)
        running = torch.where(valid[:, step], delta + discount * running, torch.zeros_like(running))
        next_value = torch.where(valid[:, step], values[:, step], torch.zeros_like(next_value))
        adv[:, step] = running
    raw = adv[traj, rank]  # (M,)
    returns[row, col] = raw + values[traj, rank]
    advantages[row, col] = whiten(raw) if cfg.gae_whiten else raw
    return AdvantageOutput(advantages, returns)


@register_advantage("grpo", needs=Needs(groups=True), source="GRPO, arXiv 2402.03300")
def grpo(batch: RolloutBatch, cfg: CreditConfig) -> AdvantageOutput:
    per_traj = normalise_in_groups(batch.traj_return, batch.traj_group, cfg.grpo_norm_by_std)  # (N,)
    return AdvantageOutput(broadcast_trajectory(batch, per_traj))


@register_advantage("rloo", needs=Needs(groups=True), source="RLOO, arXiv 2402.14740")
def rloo(batch: RolloutBatch, cfg: CreditConfig) -> AdvantageOutput:
    group, n = compact_ids(batch.traj_group)
    ret = batch.traj_return.double()  # (N,) float64: see normalise_in_groups
    total = group_sum(ret, group, n)[group]  # (N,)
    count = group_sum(torch.ones_like(ret), group, n)[group]  # (N,)
    baseline = (total - ret) / (count - 1).clamp(min=1)  # (N,)
    informative = (count > 1) & ~group_all_equal(ret, group, n)[group]  # (N,)
    per_traj = torch.where(informative, ret - baseline, torch.zeros_like(ret))  # (N,)
    return AdvantageOutput(broadcast_trajectory(batch, per_traj.float()))


def turn_rewards(batch: RolloutBatch, max_turns: int) -> torch.Tensor:
    """(N_traj, max_turns) sum of token_rewards over each turn's generated tokens."""
    mask = batch.response_mask & (batch.turn_index >= 0)
    row, col = mask.nonzero(as_tuple=True)  # (M,)
    turn = batch.turn_index[row, col]  # (M,)
    if turn.numel() and int(turn.max()) >= max_turns:
        raise ValueError(f"turn_index {int(turn.max())} is outside turn_obs_key's {max_turns} turns")
    flat = batch.sample_traj[row] * max_turns + turn  # (M,)
    n = batch.num_trajectories * max_turns
    return group_sum(batch.token_rewards[row, col].float(), flat, n).view(batch.num_trajectories, max_turns)


@register_advantage("gigpo-step", method="gigpo", needs=Needs(step_groups=True, groups=True),
                    source="GiGPO, arXiv 2505.10978")
def gigpo_step(batch: RolloutBatch, cfg: CreditConfig) -> AdvantageOutput:
    if batch.turn_obs_key is None:
        raise ValueError(
            "estimator 'gigpo-step' needs batch.turn_obs_key (observation keys per turn), got None"
        )
    keys = batch.turn_obs_key  # (N, K)
    n_traj, max_turns = keys.shape
    episode = normalise_in_groups(batch.traj_return, batch.traj_group, cfg.grpo_norm_by_std)  # (N,)
    rewards = turn_rewards(batch, max_turns)  # (N, K)
    step_return = torch.zeros_like(rewards)  # (N, K)
    running = torch.zeros(n_traj, device=rewards.device)  # (N,)
    for k in range(max_turns - 1, -1, -1):
        running = rewards[:, k] + cfg.gamma * running
        step_return[:, k] = running
    traj_idx, turn_idx = (keys != -1).nonzero(as_tuple=True)  # (P,)
    step_adv = torch.zeros_like(rewards)  # (N, K)
    if traj_idx.numel():
        pairs = torch.stack([batch.traj_group[traj_idx], keys[traj_idx, turn_idx]], dim=1)  # (P, 2)
        _, step_group = torch.unique(pairs, dim=0, return_inverse=True)  # (P,)
        step_adv[traj_idx, turn_idx] = normalise_in_groups(
            step_return[traj_idx, turn_idx], step_group, cfg.grpo_norm_by_std
        )
    turn = batch.turn_index.clamp(min=0, max=max_turns - 1)  # (B, T)
    traj = batch.sample_traj[:, None].expand_as(turn)  # (B, T)
    has_turn = batch.turn_index >= 0  # (B, T)
    step_tok = torch.where(has_turn, step_adv[traj, turn], torch.zeros_like(step_adv[traj, turn]))  # (B, T)
    advantages = broadcast_trajectory(batch, episode) + cfg.gigpo_step_weight * step_tok  # (B, T)
    return AdvantageOutput(torch.where(batch.response_mask, advantages, torch.zeros_like(advantages)))
