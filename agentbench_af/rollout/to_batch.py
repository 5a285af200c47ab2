"""Turn trajectories into a padded `RolloutBatch` (full mode: a sample per trajectory; window: per turn)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from agentbench_af.formats.roles import Role
from agentbench_af.rollout.batch import RolloutBatch
from agentbench_af.rollout.types import Trajectory


def _samples(traj: Trajectory, context_mode: str) -> list[tuple[list[int], list[tuple[int, int]]]]:
    """(ids, [(turn index, start position of that turn's response)]) per sample of `traj`."""
    if not traj.turns:
        return []
    if context_mode == "full":
        last = traj.turns[-1]
        ids = last.context_ids + last.response_ids
        return [(ids, [(k, len(t.context_ids)) for k, t in enumerate(traj.turns)])]
    return [(t.context_ids + t.response_ids, [(k, len(t.context_ids))]) for k, t in enumerate(traj.turns)]


def trajectories_to_batch(trajs: Sequence[Trajectory], context_mode: str, pad_token_id: int) -> RolloutBatch:
    """Pad every sample on the right to the longest; fill roles, log-probs, rewards per generated token."""
    rows: list[tuple[int, int, list[int], list[tuple[int, int]]]] = []  # (traj, order, ids, turn starts)
    for ti, traj in enumerate(trajs):
        for order, (ids, starts) in enumerate(_samples(traj, context_mode)):
            rows.append((ti, order, ids, starts))
    if not rows:
        raise ValueError("no trajectory has a generated turn")
    B, T = len(rows), max(len(r[2]) for r in rows)
    input_ids = torch.full((B, T), pad_token_id, dtype=torch.long)  # (B, T)
    attention = torch.zeros((B, T), dtype=torch.bool)  # (B, T)
    response = torch.zeros((B, T), dtype=torch.bool)  # (B, T)
    roles = torch.full((B, T), int(Role.PROMPT), dtype=torch.int8)  # (B, T)
    old_lp = torch.zeros((B, T))  # (B, T)
    entropy = torch.zeros((B, T))  # (B, T)
    rewards = torch.zeros((B, T))  # (B, T)
    turn_index = torch.full((B, T), -1, dtype=torch.long)  # (B, T)
    for b, (ti, _, ids, starts) in enumerate(rows):
        input_ids[b, : len(ids)] = torch.as_tensor(ids, dtype=torch.long)
        attention[b, : len(ids)] = True
        for k, start in starts:
            turn = trajs[ti].turns[k]
            n = len(turn.response_ids)
            if n == 0:
                continue
            sl = slice(start, start + n)
            if input_ids[b, sl].tolist() != turn.response_ids:
                raise AssertionError("sample ids do not match the sampled response ids")
            response[b, sl] = True
            roles[b, sl] = torch.as_tensor(turn.roles, dtype=torch.int8)
            old_lp[b, sl] = torch.as_tensor(turn.logprobs)
            entropy[b, sl] = torch.as_tensor(turn.entropies)
            rewards[b, start + n - 1] = turn.reward
            turn_index[b, sl] = k
    max_turns = max(len(t.turns) for t in trajs)
    obs_key = torch.full((len(trajs), max(max_turns, 1)), -1, dtype=torch.long)  # (N_traj, max_turns)
    for ti, traj in enumerate(trajs):
        for k, turn in enumerate(traj.turns):
            obs_key[ti, k] = turn.obs_key
    return RolloutBatch(
        input_ids=input_ids,
        attention_mask=attention,
        response_mask=response,
        roles=roles,
        old_logprobs=old_lp,
        entropy=entropy,
        token_rewards=rewards,
        turn_index=turn_index,
        sample_traj=torch.as_tensor([r[0] for r in rows], dtype=torch.long),
        sample_order=torch.as_tensor([r[1] for r in rows], dtype=torch.long),
        traj_group=torch.as_tensor([t.group for t in trajs], dtype=torch.long),
        traj_return=torch.as_tensor([t.total_reward for t in trajs], dtype=torch.float32),
        traj_success=torch.as_tensor([t.success for t in trajs], dtype=torch.bool),
        turn_obs_key=obs_key,
    )
