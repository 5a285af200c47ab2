"""The generated tokens of a `RolloutBatch` as flat (M,) columns, and the contributions c of the secondary
|c| numbers (docs/diagnose.md).

    c_{i,t} = (e_{i,t} - mean_e) * (R_i - mean_R)

per group of rollouts of one prompt: mean_e is the mean energy over the group's generated tokens (every
role, every sample of every trajectory), mean_R the mean return over the group's trajectories. Groups
whose returns are all equal are skipped: their tokens get c = 0 and count as unused.
A trajectory may span several samples (window mode); its tokens are pooled through `sample_traj`.
Left out: per-turn rewards (R_i is the trajectory's undiscounted return, `traj_return`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from agentbench_af.credit.energy import token_energy
from agentbench_af.credit.groups import compact_ids, group_sum
from agentbench_af.formats.roles import Role
from agentbench_af.rollout.batch import RolloutBatch

DIAG_ROLES: tuple[Role, ...] = (Role.REASONING, Role.ACTION, Role.FORMAT)
ROLE_KEYS: tuple[str, ...] = tuple(r.name.lower() for r in DIAG_ROLES)  # ("reasoning", "action", "format")
REL_TOL = 1e-9  # values whose range is at most REL_TOL * their magnitude count as constant


def is_constant(hi: torch.Tensor, lo: torch.Tensor) -> torch.Tensor:
    """Elementwise: is a set with maximum `hi` and minimum `lo` constant (up to REL_TOL)?"""
    return (hi - lo) <= REL_TOL * torch.maximum(hi.abs(), lo.abs())


def available_sources(batch: RolloutBatch) -> tuple[str, ...]:
    """Energy sources this batch can score: `old` and `entropy` always, `ref` when ref_logprobs is set."""
    return ("old", "entropy") + (("ref",) if batch.ref_logprobs is not None else ())


@dataclass(frozen=True)
class TokenTable:
    """One entry per generated token (M of them), in row-major batch order; groups compacted to 0..G-1."""

    row: torch.Tensor  # (M,) long: sample row
    col: torch.Tensor  # (M,) long: position
    traj: torch.Tensor  # (M,) long: trajectory id
    group: torch.Tensor  # (M,) long: compact group id
    role: torch.Tensor  # (M,) long: index into DIAG_ROLES (0 reasoning, 1 action, 2 format)
    turn: torch.Tensor  # (M,) long: turn index (>= 0)
    traj_group: torch.Tensor  # (N,) long: compact group id of each trajectory
    reward: torch.Tensor  # (N,) float64: traj_return
    n_groups: int

    @property
    def n_tokens(self) -> int:
        return int(self.row.numel())

    @property
    def n_traj(self) -> int:
        return int(self.traj_group.numel())


def _check(batch: RolloutBatch) -> None:
    B, T = batch.input_ids.shape
    for name in ("attention_mask", "response_mask", "roles", "old_logprobs", "entropy", "turn_index"):
        if tuple(getattr(batch, name).shape) != (B, T):
            raise ValueError(f"batch.{name} has shape {tuple(getattr(batch, name).shape)}, expected {(B, T)}")
    if batch.ref_logprobs is not None and tuple(batch.ref_logprobs.shape) != (B, T):
        raise ValueError(f"batch.ref_logprobs has shape {tuple(batch.ref_logprobs.shape)}, expected {(B, T)}")
    if tuple(batch.sample_traj.shape) != (B,):
        raise ValueError(f"batch.sample_traj has shape {tuple(batch.sample_traj.shape)}, expected {(B,)}")
    n = batch.num_trajectories
    if tuple(batch.traj_return.shape) != (n,):
        raise ValueError(f"batch.traj_return has shape {tuple(batch.traj_return.shape)}, expected {(n,)}")
    if B and (int(batch.sample_traj.min()) < 0 or int(batch.sample_traj.max()) >= n):
        raise ValueError(f"batch.sample_traj must lie in 0..{n - 1} (the trajectories of traj_group)")
    if not torch.isfinite(batch.traj_return).all():
        raise ValueError("batch.traj_return holds a non-finite reward")


def token_table(batch: RolloutBatch) -> TokenTable:
    """Flatten the generated tokens; a clear ValueError on shapes or roles that do not fit."""
    _check(batch)
    mask = batch.response_mask.bool()
    row, col = mask.nonzero(as_tuple=True)  # (M,)
    raw_role = batch.roles.long()[row, col]  # (M,)
    role = torch.full_like(raw_role, -1)
    for k, r in enumerate(DIAG_ROLES):
        role[raw_role == int(r)] = k
    if (role < 0).any():
        bad = sorted(set(raw_role[role < 0].tolist()))
        raise ValueError(f"generated tokens with role values {bad}; expected reasoning/action/format")
    turn = batch.turn_index.long()[row, col]  # (M,)
    if (turn < 0).any():
        raise ValueError("a generated token has turn_index < 0")
    traj_group, n_groups = compact_ids(batch.traj_group.long())  # (N,)
    traj = batch.sample_traj.long()[row]  # (M,)
    return TokenTable(row, col, traj, traj_group[traj], role, turn, traj_group,
                      batch.traj_return.double(), n_groups)


@dataclass(frozen=True)
class GroupRewards:
    mean: torch.Tensor  # (G,) float64: mean return of the group's trajectories
    var: torch.Tensor  # (G,) float64: population variance of the returns, exactly 0 when constant
    used: torch.Tensor  # (G,) bool: returns not all equal


def group_rewards(table: TokenTable) -> GroupRewards:
    g, n = table.traj_group, table.n_groups
    R = table.reward  # (N,)
    count = group_sum(torch.ones_like(R), g, n)  # (G,)
    mean = group_sum(R, g, n) / count.clamp(min=1)  # (G,)
    hi = torch.full((n,), -torch.inf, dtype=R.dtype, device=R.device).scatter_reduce(0, g, R, "amax")  # (G,)
    lo = torch.full((n,), torch.inf, dtype=R.dtype, device=R.device).scatter_reduce(0, g, R, "amin")  # (G,)
    used = ~is_constant(hi, lo)  # (G,)
    var = group_sum((R - mean[g]) ** 2, g, n) / count.clamp(min=1)  # (G,)
    return GroupRewards(mean, torch.where(used, var, torch.zeros_like(var)), used)


def flat_energy(batch: RolloutBatch, table: TokenTable, source: str) -> torch.Tensor:
    """(M,) float64 energy of each generated token under `source` (old / entropy / ref)."""
    energy = token_energy(batch, source)[table.row, table.col].double()  # (M,)
    if not torch.isfinite(energy).all():
        raise ValueError(f"energy source {source!r} has a non-finite value on a generated token")
    return energy


def flat_contributions(table: TokenTable, energy: torch.Tensor, rewards: GroupRewards,
                       reward: torch.Tensor | None = None) -> torch.Tensor:
    """(M,) float64 c of each generated token; 0 in skipped groups. `reward` (N,) overrides
    table.reward (for shuffled rewards: the group means and skips stay those of the real rewards)."""
    g = table.group
    count = group_sum(torch.ones_like(energy), g, table.n_groups)  # (G,)
    mean_e = group_sum(energy, g, table.n_groups) / count.clamp(min=1)  # (G,)
    adv = (table.reward if reward is None else reward)[table.traj] - rewards.mean[g]  # (M,)
    c = (energy - mean_e[g]) * adv  # (M,)
    return torch.where(rewards.used[g], c, torch.zeros_like(c))


def shuffled_rewards(table: TokenTable, generator: torch.Generator) -> torch.Tensor:
    """(N,) the returns permuted at random within each group (a null model: reward unrelated to tokens)."""
    g = table.traj_group.double()  # (N,)
    noise = torch.rand(g.shape, generator=generator, dtype=torch.float64).to(g.device)  # (N,) in [0, 1)
    in_order = torch.argsort(g, stable=True)  # (N,) trajectories by group
    shuffled = torch.argsort(g + noise)  # (N,) by group, random order inside each
    out = torch.empty_like(table.reward)
    out[in_order] = table.reward[shuffled]
    return out


def token_contributions(batch: RolloutBatch, source: str = "old") -> torch.Tensor:
    """(B, T) float32 signed c of every generated token (0 elsewhere and in skipped groups).

    `token_contributions(batch, "old").abs()` is the |c| tensor `html.render_html` shades tokens by.
    """
    table = token_table(batch)
    c = flat_contributions(table, flat_energy(batch, table, source), group_rewards(table))  # (M,)
    out = torch.zeros(batch.input_ids.shape, dtype=torch.float32, device=c.device)  # (B, T)
    out[table.row, table.col] = c.float()
    return out
