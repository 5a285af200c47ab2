"""The policy-gradient signal each token role carries in a group of rollouts, and its shuffled-advantage null.

    grams = role_grams(lm, batch, rows, row_rollout, G, temperature, device, format_role="reasoning")
    grams["action"]                      # (G, G) float64 Gram matrix K_ij = <g_i, g_j> of the action role
    S = signal_energy(K, A)              # || sum_i A_i g_i ||^2 with the real advantages
    N = null_energy(K, A)                # the mean of the same over every within-group shuffle of A
    shuffled = signal_energy(K, A[perm]) # one shuffle

For rollout i of a group and role k, g_i = grad_theta sum_{t in role k} log p_theta(y_{i,t}) (every trainable
parameter of `lm`, logits divided by the rollout temperature as in training). The policy-gradient signal
of the role is the squared norm S = ||sum_i A_i g_i||^2 = A^T K A; its null keeps every rollout, token and
advantage magnitude and only breaks the link between rollouts and advantages: A is permuted within the
group. The null mean over all G! permutations has a closed form (`null_energy`), with m2 = mean(A^2) and
c = ((sum A)^2 - sum A^2) / (G (G - 1)), the mean of A_p(i) A_p(j) over permutations for i != j:

    E_p[S_p] = m2 * tr(K) + c * (1^T K 1 - tr(K))

so no shuffle is needed for it (shuffles serve the null of the headline, in `headline.py`).
Squared norms, not norms: S - E_p[S_p] has mean exactly 0 when the advantages are unrelated to the
rollouts, and squared norms of sums over groups add up; ||.|| - mean ||.|| has neither property (by
Jensen the mean norm under shuffles is below the root of the mean squared norm).
Cost: per rollout, one forward pass over its own rows and one backward pass per role (2 G backward passes
per group, each through one rollout's graph only: a backward through the whole group's graph costs G
times more); the G per-rollout gradients of both roles are held at once (2 G x parameters floats).
The forward projects logits only where a generated token is predicted (`token_stats` with the response
mask: chunked on a large vocabulary such as SmolLM2's), so no (rows, T, V) logits tensor is built.
Left out: models whose G flattened gradients do not fit in memory (no streaming of the Gram matrix).
"""

from __future__ import annotations

import torch
from torch import nn

from agentbench_af.credit.roles import credit_roles
from agentbench_af.formats.roles import Role
from agentbench_af.models.forward import token_stats
from agentbench_af.rollout.batch import RolloutBatch

SIGNAL_ROLES: tuple[str, ...] = ("action", "reasoning")
FORMAT_ROLES: tuple[str, ...] = ("reasoning", "action", "format")  # where format tokens are counted


def role_masks(batch: RolloutBatch, format_role: str = "reasoning") -> dict[str, torch.Tensor]:
    """(B, T) bool masks of the generated action and reasoning tokens; format tokens join `format_role`
    ("format": neither)."""
    if format_role not in FORMAT_ROLES:
        raise ValueError(f"format_role must be one of {list(FORMAT_ROLES)}, got {format_role!r}")
    resp = batch.response_mask.bool()  # (B, T)
    roles = batch.roles if format_role == "format" else credit_roles(batch.roles, format_role)  # (B, T)
    masks = {"action": roles == int(Role.ACTION), "reasoning": roles == int(Role.REASONING)}
    return {k: resp & m for k, m in masks.items()}


def _flat_grad(out: torch.Tensor, params: list[nn.Parameter]) -> torch.Tensor:
    grads = torch.autograd.grad(out, params, retain_graph=True, allow_unused=True)
    return torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1).float() for p, g in zip(params, grads,
                                                                                                   strict=True)])


def role_grams(lm: nn.Module, batch: RolloutBatch, rows: torch.Tensor, row_rollout: torch.Tensor, n_rollouts: int,
               temperature: float, device: torch.device | str, format_role: str = "reasoning",
               ) -> dict[str, torch.Tensor]:
    """Per role, the (G, G) float64 Gram matrix of the per-rollout gradients g_i of one group.

    `rows` (b,) are the batch rows of the group's rollouts, `row_rollout` (b,) the rollout (0..G-1) of each
    row (a rollout may span several rows in window mode). A rollout without tokens of a role has g_i = 0.
    The model's train/eval mode is restored afterwards; parameter .grad fields are left untouched."""
    params = [p for p in lm.parameters() if p.requires_grad]
    size = sum(p.numel() for p in params)
    vecs: dict[str, list[torch.Tensor]] = {k: [] for k in SIGNAL_ROLES}
    was_training = lm.training
    lm.eval()
    try:
        with torch.enable_grad():
            for i in range(n_rollouts):
                for role, v in zip(SIGNAL_ROLES, _rollout_grads(lm, batch, rows[row_rollout == i], params, size,
                                                                temperature, device, format_role), strict=True):
                    vecs[role].append(v)
    finally:
        lm.train(was_training)
    out = {}
    for role in SIGNAL_ROLES:
        V = torch.stack(vecs[role]).double()  # (G, P)
        out[role] = (V @ V.T).cpu()  # (G, G)
    return out


def _rollout_grads(lm: nn.Module, batch: RolloutBatch, rows: torch.Tensor, params: list[nn.Parameter], size: int,
                   temperature: float, device: torch.device | str, format_role: str) -> list[torch.Tensor]:
    """The flattened gradient of each role's summed log-probs over one rollout's rows (one forward pass,
    one backward pass per role that has tokens; zeros for a role without)."""
    sub = batch.select(rows)
    masks = role_masks(sub, format_role)
    width = int(sub.attention_mask.long().sum(-1).max()) if len(rows) else 0  # right padding: trim the tail
    zero = torch.zeros(size, device=device)
    if width == 0 or not any(bool(masks[k].any()) for k in SIGNAL_ROLES):
        return [zero for _ in SIGNAL_ROLES]
    ids, attn = sub.input_ids[:, :width].to(device), sub.attention_mask[:, :width].to(device)  # (b, W)
    resp = sub.response_mask[:, :width].to(device)  # (b, W): every role token is a generated one
    logp, _, _ = token_stats(lm, ids, attn, max(temperature, 1e-6), with_entropy=False,
                             response_mask=resp)  # (b, W), 0 off the generated tokens
    return [_flat_grad((logp * masks[k][:, :width].to(device)).sum(), params) if bool(masks[k].any()) else zero
            for k in SIGNAL_ROLES]


def signal_energy(gram: torch.Tensor, adv: torch.Tensor) -> float:
    """||sum_i A_i g_i||^2 = A^T K A for a (G, G) Gram matrix and (G,) advantages."""
    a = adv.double()
    return float(a @ gram.double() @ a)


def null_energy(gram: torch.Tensor, adv: torch.Tensor) -> float:
    """The mean of `signal_energy(gram, adv[p])` over all G! permutations p (closed form, module doc)."""
    a, K = adv.double(), gram.double()
    G = a.numel()
    if G < 2:
        return signal_energy(K, a)
    m2 = float((a * a).mean())
    c = (float(a.sum()) ** 2 - float((a * a).sum())) / (G * (G - 1))
    tr = float(K.diagonal().sum())
    return m2 * tr + c * (float(K.sum()) - tr)
