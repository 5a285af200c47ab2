"""The diagnostic's headline: does the reward-linked policy-gradient signal sit on the action tokens?

    h = compute_headline(batch, lm, temperature=1.0, device="cpu", format_role="reasoning")
    h.ratio, h.null, (h.ci_low, h.ci_high)     # the headline, its null, its bootstrap interval (or None, h.reason)
    h.roles["action"].lift; h.roles["reasoning"].pearson_sum
    h.verdict()                                # one line; json.dumps(h.to_dict()); HeadlineStats.from_dict(d)
    compute_headline(batch, None)              # correlations only: ratio None, reason "no policy"

Groups (prompts) whose returns vary are used; of them the first `max_groups` (in group-id order) get the
gradient part. Per such group g and role k (action, reasoning; format tokens counted with `format_role`),
with A the group-normalised advantages of GRPO (`credit.groups.normalise_in_groups`) and g_i the gradient
of the log-probability of rollout i's role-k tokens (`gradient_signal.py`):
- S_gk = ||sum_i A_i g_i||^2, the role's policy-gradient signal; N_gk = its mean with A shuffled within
  the group (closed form over all G! shuffles); D_gk = S_gk - N_gk, the signal above the null.
- lift_k = sum_g S_gk / sum_g N_gk = 1 + sum_g D_gk / sum_g N_gk: how far the reward link raises the
  role's signal above what the same tokens and advantage magnitudes give without it.
- headline ratio = lift_action / lift_reasoning. Above 1: the reward-linked part of the signal is larger,
  relative to its null, on the actions than on the reasoning.
- null: the headline computed with the advantages shuffled within every group (the same shuffle for
  both roles), averaged over `shuffles` seeded shuffles: what the ratio is when reward is unrelated to
  the tokens (near 1, though not exactly).
- interval: percentile bootstrap over groups (`resamples` resamples of the measured groups with
  replacement, `scipy.stats.bootstrap`, seeded); needs >= 2 groups.
- share / null_share: sum_g S_gk over both roles' total, and the same of N (the role's share of the signal).
- pearson_sum / pearson_mean: per group, Pearson across its rollouts between R_i and the sum / mean of the
  role's energies e = -old log-prob (rollouts without role tokens left out of the mean version), averaged
  over the groups where defined (>= 2 rollouts, neither side constant), over every used group.
The claim that the signal concentrates on the actions holds only where the interval lies above the null.
`grams` (e.g. `results.diagnose_checkpoint.DiagnoseCheckpoint`) keeps each measured group's Gram matrices, so that a killed
diagnostic resumes; `on_group(done, total)` is called after each measured group (a progress bar).
Undefined values are None with a `reason`. Left out: per-turn headlines and other energy sources (the
gradient does not depend on an energy source).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np
import torch
from scipy import stats as sps
from torch import nn

from agentbench_af.credit.groups import compact_ids, normalise_in_groups
from agentbench_af.diagnose.gradient_signal import (
    SIGNAL_ROLES,
    null_energy,
    role_grams,
    role_masks,
    signal_energy,
)
from agentbench_af.diagnose.tokens import REL_TOL
from agentbench_af.rollout.batch import RolloutBatch


class GramStore(Protocol):
    """Where measured groups' Gram matrices are kept between calls (`results.diagnose_checkpoint.DiagnoseCheckpoint`)."""

    def grams(self, group: int) -> dict[str, torch.Tensor] | None: ...

    def put(self, group: int, grams: dict[str, torch.Tensor]) -> None: ...


@dataclass(frozen=True)
class RoleSignal:
    n_tokens: int  # the role's generated tokens in the measured groups
    signal: float | None  # sum over measured groups of S_gk
    null_signal: float | None  # sum over measured groups of N_gk
    above_null: float | None  # signal - null_signal
    lift: float | None  # signal / null_signal
    share: float | None  # signal / both roles' signal
    null_share: float | None  # null_signal / both roles' null_signal
    pearson_sum: float | None  # mean over groups of Pearson(R_i, sum of the role's energies in rollout i)
    pearson_sum_groups: int  # groups where it is defined
    pearson_mean: float | None  # the same with the mean energy of the role's tokens in rollout i
    pearson_mean_groups: int


@dataclass(frozen=True)
class GroupSignal:
    group: int  # compact group id (0..n_groups-1, in the order of the batch's group ids)
    rollouts: int
    signal: dict[str, float]  # role -> S_gk
    null_signal: dict[str, float]  # role -> N_gk


@dataclass(frozen=True)
class HeadlineStats:
    ratio: float | None  # lift_action / lift_reasoning
    null: float | None  # mean of the ratio over within-group shuffles of the advantages
    ci_low: float | None
    ci_high: float | None
    confidence: float
    n_groups_used: int  # groups whose returns vary
    n_groups_measured: int  # of them, the ones with a gradient measurement (at most max_groups)
    max_groups: int
    shuffles: int
    resamples: int
    format_role: str
    roles: dict[str, RoleSignal]
    groups: list[GroupSignal] = field(default_factory=list)
    reason: str | None = None  # why ratio is None

    def to_dict(self, with_groups: bool = True) -> dict[str, Any]:
        out = asdict(self)
        if not with_groups:
            out.pop("groups")
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HeadlineStats:
        roles = {k: RoleSignal(**v) for k, v in d["roles"].items()}
        groups = [GroupSignal(**g) for g in d.get("groups", [])]
        return cls(**{**d, "roles": roles, "groups": groups})

    def verdict(self) -> str:
        return headline_verdict(self.ratio, self.null, self.ci_low, self.ci_high, self.confidence, self.reason)

    @property
    def above_null(self) -> bool | None:
        """True: interval above the null; False: below or overlapping; None: no interval."""
        return None if self.ci_low is None or self.null is None else self.ci_low > self.null


def interval_position(null: float | None, lo: float | None, hi: float | None) -> str | None:
    """Where an interval [lo, hi] lies against the null: "above", "below", "contains"; None without both."""
    if lo is None or hi is None or null is None:
        return None
    return "above" if lo > null else "below" if hi < null else "contains"


def headline_verdict(ratio: float | None, null: float | None, lo: float | None, hi: float | None,
                     confidence: float = 0.95, reason: str | None = None) -> str:
    """One line: where the headline's interval lies against its null."""
    if ratio is None:
        return f"headline undefined ({reason})."
    where = f"action/reasoning signal ratio {ratio:.2f} (null {null:.2f})" if null is not None else \
        f"action/reasoning signal ratio {ratio:.2f}"
    position = interval_position(null, lo, hi)
    if position is None:
        return f"{where}; no interval (fewer than 2 groups): no claim either way."
    ci = f"{100 * confidence:.0f}% interval [{lo:.2f}, {hi:.2f}]"
    return f"{where}, {ci} " + {
        "above": "above the null: the reward-linked signal concentrates on the actions.",
        "below": "below the null: the reward-linked signal concentrates on the reasoning.",
        "contains": "contains the null: no evidence that the signal concentrates on the actions."}[position]


def _pearson(x: np.ndarray, y: np.ndarray) -> float | None:
    if len(x) < 2:
        return None
    for v in (x, y):
        if v.max() - v.min() <= REL_TOL * max(abs(v.max()), abs(v.min())):
            return None
    r = float(np.corrcoef(x, y)[0, 1])
    return r if np.isfinite(r) else None


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _ratio(a: float, b: float) -> float | None:
    return float(a / b) if b > 0 and np.isfinite(a / b) else None


def _headline(s_a: np.ndarray, n_a: np.ndarray, s_r: np.ndarray, n_r: np.ndarray, axis: int = -1) -> np.ndarray:
    """lift_action / lift_reasoning from per-group arrays (vectorised over leading axes for the bootstrap)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (s_a.sum(axis) / n_a.sum(axis)) / (s_r.sum(axis) / n_r.sum(axis))


@dataclass(frozen=True)
class _Groups:
    traj_group: torch.Tensor  # (N,) compact group id of each trajectory
    n_groups: int
    used: list[int]  # groups whose returns vary
    adv: torch.Tensor  # (N,) float64 group-normalised advantages


def _groups(batch: RolloutBatch) -> _Groups:
    traj_group, n = compact_ids(batch.traj_group.long())  # (N,)
    R = batch.traj_return.double()  # (N,)
    adv = normalise_in_groups(R, traj_group, by_std=True).double()  # (N,) 0 in groups of equal returns
    used = sorted({int(g) for g in traj_group[adv != 0].tolist()})
    return _Groups(traj_group, n, used, adv)


def _correlations(batch: RolloutBatch, grp: _Groups, format_role: str) -> dict[str, tuple]:
    """Per role: (mean Pearson with the energy sum, groups, mean Pearson with the energy mean, groups)."""
    masks = role_masks(batch, format_role)
    energy = -batch.old_logprobs.double()  # (B, T)
    N = batch.num_trajectories
    R = batch.traj_return.double().numpy()  # (N,)
    out = {}
    for role in SIGNAL_ROLES:
        m = masks[role]  # (B, T)
        tot = torch.zeros(N, dtype=torch.float64).index_add_(0, batch.sample_traj, (energy * m).sum(-1))  # (N,)
        cnt = torch.zeros(N, dtype=torch.float64).index_add_(0, batch.sample_traj, m.sum(-1).double())  # (N,)
        if not torch.isfinite(tot).all():
            raise ValueError("old_logprobs holds a non-finite value on a generated token")
        r_sum, r_mean = [], []
        for g in grp.used:
            idx = (grp.traj_group == g).nonzero().squeeze(-1)  # (G,)
            r = _pearson(tot[idx].numpy(), R[idx.numpy()])
            if r is not None:
                r_sum.append(r)
            has = idx[cnt[idx] > 0]
            r = _pearson((tot[has] / cnt[has]).numpy(), R[has.numpy()])
            if r is not None:
                r_mean.append(r)
        out[role] = (_mean(r_sum), len(r_sum), _mean(r_mean), len(r_mean))
    return out


def _group_signal(lm: nn.Module, batch: RolloutBatch, grp: _Groups, g: int, temperature: float,
                  device: torch.device | str, format_role: str,
                  store: GramStore | None) -> tuple[GroupSignal, dict[str, torch.Tensor], torch.Tensor]:
    trajs = (grp.traj_group == g).nonzero().squeeze(-1)  # (G,)
    grams = store.grams(g) if store is not None else None
    if grams is None or any(tuple(grams.get(k, torch.empty(0)).shape) != (trajs.numel(),) * 2 for k in SIGNAL_ROLES):
        local = torch.full((grp.traj_group.numel(),), -1, dtype=torch.long)
        local[trajs] = torch.arange(trajs.numel())
        row_local = local[batch.sample_traj]  # (B,)
        rows = (row_local >= 0).nonzero().squeeze(-1)  # (b,)
        grams = role_grams(lm, batch, rows, row_local[rows], int(trajs.numel()), temperature, device, format_role)
        if store is not None:
            store.put(g, grams)
    adv = grp.adv[trajs]  # (G,)
    sig = GroupSignal(g, int(trajs.numel()), {k: signal_energy(grams[k], adv) for k in SIGNAL_ROLES},
                      {k: null_energy(grams[k], adv) for k in SIGNAL_ROLES})
    return sig, grams, adv


def compute_headline(batch: RolloutBatch, lm: nn.Module | None, temperature: float = 1.0,
                     device: torch.device | str = "cpu", format_role: str = "reasoning", max_groups: int = 16,
                     shuffles: int = 64, resamples: int = 1000, confidence: float = 0.95,
                     seed: int = 0, grams: GramStore | None = None,
                     on_group: Callable[[int, int], object] | None = None) -> HeadlineStats:
    """The headline of `batch` under policy `lm` (None: correlations only). Raises ValueError on bad
    settings or a batch whose log-probs are not finite."""
    if max_groups < 1 or shuffles < 1 or resamples < 1 or not 0 < confidence < 1:
        raise ValueError(f"need max_groups, shuffles, resamples >= 1 and 0 < confidence < 1; got {max_groups}, "
                         f"{shuffles}, {resamples}, {confidence}")
    grp = _groups(batch)
    corr = _correlations(batch, grp, format_role)
    measured = grp.used[:max_groups] if lm is not None else []
    masks = role_masks(batch, format_role)
    in_measured = torch.isin(grp.traj_group[batch.sample_traj], torch.tensor(measured, dtype=torch.long))  # (B,)
    n_tok = {k: int(masks[k][in_measured].sum()) for k in SIGNAL_ROLES}
    rng = np.random.default_rng(seed)
    groups, shuffled = [], np.zeros((shuffles, len(measured), len(SIGNAL_ROLES)))  # (P, Gm, 2)
    for j, g in enumerate(measured):
        assert lm is not None  # `measured` is empty without a policy
        sig, gram, adv = _group_signal(lm, batch, grp, g, temperature, device, format_role, grams)
        groups.append(sig)
        for p in range(shuffles):
            perm = torch.from_numpy(rng.permutation(adv.numel()))
            shuffled[p, j] = [signal_energy(gram[k], adv[perm]) for k in SIGNAL_ROLES]
        if on_group is not None:
            on_group(j + 1, len(measured))
    S = np.array([[gs.signal[k] for k in SIGNAL_ROLES] for gs in groups]).reshape(-1, 2)  # (Gm, 2)
    N = np.array([[gs.null_signal[k] for k in SIGNAL_ROLES] for gs in groups]).reshape(-1, 2)  # (Gm, 2)
    tot_s, tot_n = S.sum(0), N.sum(0)  # (2,)
    roles = {}
    for i, k in enumerate(SIGNAL_ROLES):
        has = bool(measured)
        roles[k] = RoleSignal(
            n_tokens=n_tok[k], signal=float(tot_s[i]) if has else None, null_signal=float(tot_n[i]) if has else None,
            above_null=float(tot_s[i] - tot_n[i]) if has else None, lift=_ratio(tot_s[i], tot_n[i]),
            share=_ratio(tot_s[i], tot_s.sum()), null_share=_ratio(tot_n[i], tot_n.sum()),
            pearson_sum=corr[k][0], pearson_sum_groups=corr[k][1], pearson_mean=corr[k][2], pearson_mean_groups=corr[k][3])
    ratio = null = lo = hi = None
    reason = _undefined(lm, grp, measured, roles)
    if reason is None:
        ratio = float(_headline(S[:, 0], N[:, 0], S[:, 1], N[:, 1]))
        nulls = _headline(shuffled[..., 0], N[None, :, 0], shuffled[..., 1], N[None, :, 1])  # (P,)
        nulls = nulls[np.isfinite(nulls)]
        null = float(nulls.mean()) if nulls.size else None
        if len(measured) >= 2:
            res = sps.bootstrap((S[:, 0], N[:, 0], S[:, 1], N[:, 1]), _headline, paired=True, vectorized=True,
                                n_resamples=resamples, confidence_level=confidence, method="percentile", rng=rng)
            ci = res.confidence_interval
            lo, hi = (float(ci.low), float(ci.high)) if np.isfinite([ci.low, ci.high]).all() else (None, None)
    return HeadlineStats(ratio, null, lo, hi, confidence, len(grp.used), len(measured), max_groups, shuffles,
                         resamples, format_role, roles, groups, reason)


def _undefined(lm: nn.Module | None, grp: _Groups, measured: list[int], roles: dict[str, RoleSignal]) -> str | None:
    if lm is None:
        return "no policy to take gradients of"
    if not grp.used:
        return f"no group with reward variance ({grp.n_groups} groups)"
    for k in SIGNAL_ROLES:
        if roles[k].n_tokens == 0:
            return f"no {k} tokens in the measured groups"
        if roles[k].lift is None:
            return f"no {k} gradient signal (every {k} gradient is 0)"
    return None
