"""EMPG (Entropy-Modulated Policy Gradients, arXiv 2509.09265) as an advantage estimator: `method = empg`.

A step is one assistant turn: (trajectory, turn). Its entropy H is the mean rollout entropy of its
generated tokens; H_norm = (H - min H) / (max H - min H + 1e-8) over every step of the batch.
    g(H) = exp(-k H_norm) / (mean over the batch's steps of exp(-k H_norm) + 1e-8)   self-calibrating scaling
    f(H) = exp(-k_f H_norm)                                                          future clarity
    A_step = g(H_t) A + zeta f(H_{t+1})        (no bonus on a trajectory's last step)
then the mean of A_step over the batch's steps is subtracted, and every token of a step carries its A_step.
A is grpo's group-normalised trajectory advantage (credit.grpo_norm_by_std); k = credit.empg_k,
k_f = credit.empg_k_f, zeta = credit.empg_zeta (1, 1, 0.1: the project page's pseudocode).
Taken from the project page's pseudocode and a public verl port: the step entropy as the mean token
entropy of an assistant segment, the min-max normalisation, g's batch mean 1, f, the bonus from the
next step of the same sequence, and the final centring by the mean step advantage. Our reading where
they are loose: the pseudocode multiplies the whole batch's advantages by each step's g (read here as
that step's tokens only), and its "next step" is the next assistant segment of the same row (here the
next turn of the same trajectory, also across rows in window mode). All statistics are over every
rank's steps (`batch_reduce()`).
"""

from __future__ import annotations

import torch

from agentbench_af.credit.config import CreditConfig
from agentbench_af.credit.groups import normalise_in_groups
from agentbench_af.credit.neighbours import step_entropy, turn_ids
from agentbench_af.credit.reduce import batch_reduce
from agentbench_af.credit.registry import AdvantageOutput, Needs, register_advantage
from agentbench_af.rollout.batch import RolloutBatch


def empg_step_advantages(h: torch.Tensor, adv: torch.Tensor, has_next: torch.Tensor, cfg: CreditConfig) -> torch.Tensor:
    """(S,) step entropies, (S,) base advantages, (S,) whether step s + 1 is the same trajectory's next
    step -> (S,) modulated, centred step advantages (statistics over every rank's steps)."""
    reduce = batch_reduce()
    lo = float(reduce.min(h.min() if h.numel() else h.new_tensor(float("inf"))))
    hi = float(reduce.max(h.max() if h.numel() else h.new_tensor(float("-inf"))))
    h_norm = (h - lo) / (hi - lo + 1e-8) if h.numel() else h  # (S,)
    g = torch.exp(-cfg.empg_k * h_norm)  # (S,)
    count, g_sum = (float(v) for v in reduce.sum(torch.stack([h.new_tensor(float(h.numel())), g.sum()])))
    g = g / (g_sum / max(count, 1.0) + 1e-8)
    f = torch.exp(-cfg.empg_k_f * h_norm)  # (S,)
    bonus = torch.zeros_like(f)
    bonus[:-1] = torch.where(has_next[:-1], f[1:], torch.zeros_like(f[1:]))
    step_adv = g * adv + cfg.empg_zeta * bonus  # (S,)
    _, total = (float(v) for v in reduce.sum(torch.stack([h.new_tensor(float(h.numel())), step_adv.sum()])))
    return step_adv - total / max(count, 1.0)


@register_advantage("empg", needs=Needs(groups=True), source="EMPG, arXiv 2509.09265")
def empg(batch: RolloutBatch, cfg: CreditConfig) -> AdvantageOutput:
    advantages = torch.zeros(batch.response_mask.shape, device=batch.response_mask.device)  # (B, T)
    row, col, step, n = turn_ids(batch)  # step ids sorted by (trajectory, turn)
    if n == 0:
        step_entropy(batch, step, n, row, col)  # nothing to compute, but every rank joins the reductions
        empg_step_advantages(torch.zeros(0, dtype=torch.float64), torch.zeros(0, dtype=torch.float64),
                             torch.zeros(0, dtype=torch.bool), cfg)
        return AdvantageOutput(advantages)
    traj_adv = normalise_in_groups(batch.traj_return, batch.traj_group, cfg.grpo_norm_by_std).double()  # (N,)
    step_traj = torch.zeros(n, dtype=torch.long, device=row.device).scatter_(0, step, batch.sample_traj[row])  # (S,)
    has_next = torch.zeros(n, dtype=torch.bool, device=row.device)
    has_next[:-1] = step_traj[1:] == step_traj[:-1]
    h = step_entropy(batch, step, n, row, col)  # (S,)
    step_adv = empg_step_advantages(h, traj_adv[step_traj], has_next, cfg)  # (S,)
    advantages[row, col] = step_adv[step].float()
    return AdvantageOutput(advantages)
