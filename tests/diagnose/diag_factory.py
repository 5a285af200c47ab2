"""Synthetic `RolloutBatch`es for the diagnostic tests, built from trajectory specs.

A trajectory is a list of turns; a turn is a prompt stretch (`n_prompt` tokens) then generated tokens
given as a role string (r reasoning, a action, f format) with one energy per generated token (stored as
old_logprobs = -energy; entropy and ref get energy + fixed offsets so each source has its own numbers).
`full` mode puts a trajectory's turns in one sample; `window` mode gives each turn its own sample.
Import as `from diag_factory import ...` (pytest puts this folder on sys.path).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from agentbench_af.rollout.batch import Role, RolloutBatch

CODES = {"r": Role.REASONING, "a": Role.ACTION, "f": Role.FORMAT}
ENTROPY_OFFSET = 0.25  # entropy = energy * 0.5 + ENTROPY_OFFSET: a second source with other numbers
REF_OFFSET = 0.5  # ref energy = energy + REF_OFFSET


@dataclass
class Turn:
    roles: str
    energies: Sequence[float]
    n_prompt: int = 2


@dataclass
class Traj:
    group: int
    reward: float
    turns: list[Turn] = field(default_factory=list)


def make_batch(trajs: Sequence[Traj], mode: str = "full", shuffle_seed: int | None = None,
               pad: int = 1, with_ref: bool = True) -> RolloutBatch:
    rows: list[tuple[int, int, list[tuple[int, int | None, float]]]] = []  # traj, order, (role, turn, e)
    for ti, tr in enumerate(trajs):
        pieces = []
        for k, turn in enumerate(tr.turns):
            if len(turn.roles) != len(turn.energies):
                raise ValueError("one energy per generated token")
            piece = [(int(Role.PROMPT), None, 0.0)] * turn.n_prompt
            piece += [(int(CODES[ch]), k, float(e)) for ch, e in zip(turn.roles, turn.energies, strict=True)]
            pieces.append(piece)
        if mode == "full":
            rows.append((ti, 0, [tok for p in pieces for tok in p] or [(int(Role.PROMPT), None, 0.0)]))
        else:
            rows += [(ti, k, p) for k, p in enumerate(pieces)]
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(rows)
    B, T = len(rows), max(len(r[2]) for r in rows) + pad
    ids = torch.zeros(B, T, dtype=torch.long)  # (B, T)
    attn = torch.zeros(B, T, dtype=torch.bool)
    resp = torch.zeros(B, T, dtype=torch.bool)
    roles = torch.zeros(B, T, dtype=torch.int8)
    energy = torch.zeros(B, T)
    turn_index = torch.full((B, T), -1, dtype=torch.long)
    for b, (_, _, toks) in enumerate(rows):
        for t, (role, turn, e) in enumerate(toks):
            ids[b, t] = 10 + t
            attn[b, t] = True
            roles[b, t] = role
            if turn is not None:
                resp[b, t] = True
                energy[b, t] = e
                turn_index[b, t] = turn
    return RolloutBatch(
        input_ids=ids,
        attention_mask=attn,
        response_mask=resp,
        roles=roles,
        old_logprobs=-energy,
        entropy=torch.where(resp, energy * 0.5 + ENTROPY_OFFSET, torch.zeros_like(energy)),
        token_rewards=torch.zeros(B, T),
        turn_index=turn_index,
        sample_traj=torch.tensor([r[0] for r in rows], dtype=torch.long),
        sample_order=torch.tensor([r[1] for r in rows], dtype=torch.long),
        traj_group=torch.tensor([t.group for t in trajs], dtype=torch.long),
        traj_return=torch.tensor([t.reward for t in trajs], dtype=torch.float32),
        traj_success=torch.tensor([t.reward > 0 for t in trajs], dtype=torch.bool),
        ref_logprobs=torch.where(resp, -(energy + REF_OFFSET), torch.zeros_like(energy)) if with_ref else None,
    )


def bandit_trajs(seed: int, signal_role: str, n_groups: int = 24, group_size: int = 8,
                 n_turns: int = 2) -> list[Traj]:
    """Rollouts whose reward depends only on the tokens of `signal_role` ("action" or "reasoning").

    Each turn: 8 reasoning tokens then 2 action tokens then 1 format token. The signal role's tokens
    take a right choice (energy 0.5) or a wrong one (energy 1.5) per turn; the rollout's reward is the
    fraction of right turns. The other roles' energies are noise, uniform on [0.8, 1.2], independent of
    the reward; so both roles have mean energy near 1 and only the signal role carries information.
    """
    rng = random.Random(seed)
    trajs = []
    for g in range(n_groups):
        p_right = rng.uniform(0.2, 0.8)
        for _ in range(group_size):
            turns, right = [], 0
            for _ in range(n_turns):
                ok = rng.random() < p_right
                right += ok
                informative = [0.5 if ok else 1.5]
                r = [(informative[0] + rng.uniform(-0.05, 0.05)) if signal_role == "reasoning"
                     else rng.uniform(0.8, 1.2) for _ in range(8)]
                a = [(informative[0] + rng.uniform(-0.05, 0.05)) if signal_role == "action"
                     else rng.uniform(0.8, 1.2) for _ in range(2)]
                turns.append(Turn("r" * 8 + "aa" + "f", r + a + [rng.uniform(0.8, 1.2)], n_prompt=3))
            trajs.append(Traj(g, right / n_turns, turns))
    return trajs
