"""Token roles as credit assignment counts them: `credit.format_role` decides where format tokens go.

    roles = credit_roles(batch.roles, "reasoning")   # (B, T) int8: FORMAT -> REASONING, others kept
    batch = credit_view(batch, cfg)                    # the same batch with those roles

Rollouts label every generated token truly (reasoning, action or format, `formats.roles`); this is the one
place that folds format tokens into reasoning (the default) or action. The weightings, the training
loop's role counts and the diagnostic read roles through it. Left out: other mappings (prompt tokens are
never generated and stay prompt).
"""

from __future__ import annotations

from dataclasses import replace

import torch

from agentbench_af.credit.config import CreditConfig
from agentbench_af.formats.roles import Role
from agentbench_af.rollout.batch import RolloutBatch

FORMAT_ROLES = {"reasoning": Role.REASONING, "action": Role.ACTION}


def credit_roles(roles: torch.Tensor, format_role: str) -> torch.Tensor:
    """`roles` (any shape, Role values) with FORMAT replaced by the role `format_role` names."""
    if format_role not in FORMAT_ROLES:
        raise ValueError(f"format_role must be one of {sorted(FORMAT_ROLES)}, got {format_role!r}")
    target = torch.tensor(int(FORMAT_ROLES[format_role]), dtype=roles.dtype, device=roles.device)
    return torch.where(roles == int(Role.FORMAT), target, roles)


def credit_view(batch: RolloutBatch, cfg: CreditConfig | str) -> RolloutBatch:
    """A copy of `batch` whose roles are `credit_roles` (pass a CreditConfig or a format role name)."""
    format_role = cfg.format_role if isinstance(cfg, CreditConfig) else cfg
    return replace(batch, roles=credit_roles(batch.roles, format_role))
