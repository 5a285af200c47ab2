"""The secondary Action Bottleneck numbers (|c|, docs/diagnose.md) on a `RolloutBatch`, per energy source.

    from agentbench_af.diagnose import compute_bottleneck
    stats = compute_bottleneck(batch)            # BottleneckStats; sources default to available_sources
    stats.sources["old"].bottleneck_ratio        # signal share(action) / token share(action), or None
    stats.sources["old"].overall.roles["action"].signal_share
    stats.sources["old"].by_turn[0].roles["reasoning"].pearson
    json.dumps(stats.to_dict()); BottleneckStats.from_dict(d) reads it back

Per energy source (`old`: -old_logprobs, `entropy`, `ref`: -ref_logprobs when present) and per role
(reasoning, action, format), with c = (e - mean_e) * (R - mean_R) as in `tokens.py`:
- token share: the role's tokens / all generated tokens, counted in the groups with reward variance
  (the tokens the signal is measured on); signal share: sum |c| over the role / sum |c| over all tokens;
  ratio = signal share / token share (the bottleneck ratio is the action role's).
- signed_signal: sum of c over the role (not in the paper: noise cancels in it, unlike in |c|).
- null_ratio (not in the paper): the mean ratio over `null_permutations` shuffles of the returns within
  each group, i.e. the ratio when reward is unrelated to the tokens (how to read the ratio against it:
  docs/history/defaults.md).
- mean_energy: over the role's generated tokens in every group (skipped ones too).
- pearson: per group (prompt), Pearson across its rollouts between R_i and the mean energy of the role's
  tokens in rollout i (rollouts without such tokens left out), averaged over the groups where it is
  defined (>= 2 rollouts, neither side constant); pearson_prompts counts them.
- spearman: across groups holding the role, Spearman (scipy.stats.spearmanr) between the group's reward
  variance (population; 0 for groups skipped above, which take part here) and the mean energy of the
  role's tokens in the group; defined with >= 3 groups and neither side constant.
`by_turn` repeats all of it on the tokens of each turn index: c is the same per token (group means over
all turns), so a turn's numbers partition the overall ones; token_share_of_total / signal_share_of_total
give the turn's part of the whole. Undefined values are None (never NaN), so `to_dict` is plain JSON.
Left out: confidence intervals and weighting groups by size (every used group's tokens count once).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import torch
from scipy import stats as sps

from agentbench_af.credit.groups import group_sum
from agentbench_af.diagnose.tokens import (
    ROLE_KEYS,
    GroupRewards,
    TokenTable,
    available_sources,
    flat_contributions,
    flat_energy,
    group_rewards,
    is_constant,
    shuffled_rewards,
    token_table,
)
from agentbench_af.rollout.batch import RolloutBatch

N_ROLES = len(ROLE_KEYS)


@dataclass(frozen=True)
class RoleStats:
    n_tokens: int  # the role's generated tokens in used groups
    token_share: float | None
    signal: float  # sum of |c| over the role's tokens
    signal_share: float | None
    ratio: float | None  # signal_share / token_share
    null_ratio: float | None  # mean ratio with rewards shuffled within groups (None: no shuffles)
    signed_signal: float  # sum of c over the role's tokens
    mean_energy: float | None  # over the role's tokens in every group
    pearson: float | None  # mean over prompts of Pearson(R_i, role mean energy of rollout i)
    pearson_prompts: int
    spearman: float | None  # across prompts: Spearman(group reward variance, group role mean energy)
    spearman_prompts: int


@dataclass(frozen=True)
class SplitStats:
    """The numbers of one token subset: all generated tokens (`overall`) or one turn's."""

    n_tokens: int  # generated tokens in used groups
    n_tokens_all: int  # generated tokens in every group
    signal: float  # sum of |c|
    token_share_of_total: float | None  # n_tokens / all used tokens (1 for overall)
    signal_share_of_total: float | None  # signal / all signal (1 for overall)
    roles: dict[str, RoleStats]


@dataclass(frozen=True)
class SourceStats:
    source: str
    overall: SplitStats
    by_turn: dict[int, SplitStats]

    @property
    def bottleneck_ratio(self) -> float | None:
        return self.overall.roles["action"].ratio


@dataclass(frozen=True)
class BottleneckStats:
    n_groups: int
    n_groups_used: int  # groups whose rewards vary
    n_groups_skipped: int  # groups with zero reward variance
    n_trajectories: int
    n_generated_tokens: int
    null_permutations: int  # reward shuffles behind null_ratio
    sources: dict[str, SourceStats]

    def to_dict(self) -> dict:
        """Plain JSON-able dict (turn keys become strings in JSON; from_dict accepts either)."""
        out = asdict(self)
        for name, src in self.sources.items():
            out["sources"][name]["bottleneck_ratio"] = src.bottleneck_ratio
        return out

    @classmethod
    def from_dict(cls, d: dict) -> BottleneckStats:
        def split(s: dict) -> SplitStats:
            return SplitStats(**{**s, "roles": {k: RoleStats(**v) for k, v in s["roles"].items()}})

        sources = {
            name: SourceStats(
                source=src["source"],
                overall=split(src["overall"]),
                by_turn={int(t): split(s) for t, s in src["by_turn"].items()},
            )
            for name, src in d["sources"].items()
        }
        return cls(**{**{k: v for k, v in d.items() if k != "sources"}, "sources": sources})


def _opt(x: float) -> float | None:
    return x if x == x and abs(x) != float("inf") else None


def _div(a: float, b: float) -> float | None:
    return a / b if b else None


@dataclass(frozen=True)
class _Cells:
    """Per (bucket, role) cell tensors, C = K * N_ROLES cells; cell = bucket * N_ROLES + role."""

    n_used: torch.Tensor  # (C,)
    n_all: torch.Tensor  # (C,)
    signal: torch.Tensor  # (C,)
    signed: torch.Tensor  # (C,)
    sum_e: torch.Tensor  # (C,)
    pearson_sum: torch.Tensor  # (C,)
    pearson_n: torch.Tensor  # (C,)
    spearman: list[tuple[float | None, int]]  # per cell
    null_ratio: torch.Tensor  # (C,) NaN where undefined


def _pearson(table: TokenTable, energy: torch.Tensor, cell: torch.Tensor, C: int):
    """Per cell: sum over groups of the defined per-group Pearson r, and how many groups had one."""
    N, G = table.n_traj, table.n_groups
    dev = energy.device
    flat = table.traj * C + cell  # (M,)
    count = torch.zeros(N * C, dtype=energy.dtype, device=dev).index_add_(0, flat, torch.ones_like(energy))
    total = torch.zeros(N * C, dtype=energy.dtype, device=dev).index_add_(0, flat, energy)
    count, total = count.view(N, C), total.view(N, C)  # (N, C)
    valid = count > 0  # (N, C)
    x = torch.where(valid, total / count.clamp(min=1), torch.zeros_like(total))  # (N, C)
    y = table.reward[:, None].expand(N, C)  # (N, C)
    g = table.traj_group  # (N,)
    vf = valid.to(energy.dtype)

    def gsum(v: torch.Tensor) -> torch.Tensor:  # (N, C) -> (G, C)
        return torch.zeros(G, C, dtype=v.dtype, device=dev).index_add_(0, g, v)

    def grange(v: torch.Tensor) -> torch.Tensor:  # (N, C) -> (G, C) bool: constant over valid rows
        idx = g[:, None].expand(N, C)
        hi = torch.full((G, C), -torch.inf, dtype=v.dtype, device=dev).scatter_reduce(
            0, idx, torch.where(valid, v, torch.full_like(v, -torch.inf)), "amax")
        lo = torch.full((G, C), torch.inf, dtype=v.dtype, device=dev).scatter_reduce(
            0, idx, torch.where(valid, v, torch.full_like(v, torch.inf)), "amin")
        return is_constant(hi, lo)

    n = gsum(vf)  # (G, C)
    mx, my = gsum(x * vf) / n.clamp(min=1), gsum(y * vf) / n.clamp(min=1)  # (G, C)
    dx, dy = (x - mx[g]) * vf, (y - my[g]) * vf  # (N, C)
    sxy, sxx, syy = gsum(dx * dy), gsum(dx * dx), gsum(dy * dy)  # (G, C)
    defined = (n >= 2) & ~grange(x) & ~grange(y)  # (G, C)
    r = torch.where(defined, sxy / (sxx * syy).sqrt().clamp(min=1e-300), torch.zeros_like(sxy)).clamp(-1, 1)
    return r.sum(0), defined.sum(0)  # (C,), (C,)


def _spearman(table: TokenTable, energy: torch.Tensor, cell: torch.Tensor, C: int, rewards: GroupRewards):
    G = table.n_groups
    flat = table.group * C + cell  # (M,)
    count = torch.zeros(G * C, dtype=energy.dtype, device=energy.device).index_add_(
        0, flat, torch.ones_like(energy)).view(G, C)  # (G, C)
    total = torch.zeros(G * C, dtype=energy.dtype, device=energy.device).index_add_(
        0, flat, energy).view(G, C)  # (G, C)
    out: list[tuple[float | None, int]] = []
    for k in range(C):
        has = count[:, k] > 0  # (G,)
        n = int(has.sum())
        xs, vs = (total[has, k] / count[has, k]).cpu(), rewards.var[has].cpu()
        if n < 3 or bool(is_constant(xs.max(), xs.min())) or bool(is_constant(vs.max(), vs.min())):
            out.append((None, n))
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rho = float(sps.spearmanr(vs.numpy(), xs.numpy()).statistic)
        out.append((_opt(rho), n))
    return out


def _ratios(signal: torch.Tensor, n_used: torch.Tensor) -> torch.Tensor:
    """(C,) per-cell signal / token share ratios within each bucket of N_ROLES cells; NaN if undefined."""
    sig, tok = signal.view(-1, N_ROLES), n_used.view(-1, N_ROLES)  # (K, 3)
    sig_share = sig / sig.sum(-1, keepdim=True)  # (K, 3) NaN on 0 / 0
    tok_share = tok / tok.sum(-1, keepdim=True)  # (K, 3)
    ratio = torch.where(tok_share > 0, sig_share / tok_share, torch.full_like(sig_share, torch.nan))
    return ratio.view(-1)  # (C,)


def _null_ratio(table: TokenTable, energy: torch.Tensor, rewards: GroupRewards, cell: torch.Tensor,
                C: int, n_used: torch.Tensor, permutations: int, seed: int) -> torch.Tensor:
    """(C,) mean over `permutations` within-group reward shuffles of each cell's ratio (NaN if never defined)."""
    gen = torch.Generator().manual_seed(seed)
    total = torch.zeros(C, dtype=energy.dtype, device=energy.device)
    count = torch.zeros(C, dtype=energy.dtype, device=energy.device)
    for _ in range(permutations):
        c = flat_contributions(table, energy, rewards, shuffled_rewards(table, gen))  # (M,)
        ratio = _ratios(group_sum(c.abs(), cell, C), n_used)  # (C,)
        ok = ~ratio.isnan()
        total += torch.where(ok, ratio, torch.zeros_like(ratio))
        count += ok.to(count.dtype)
    return torch.where(count > 0, total / count.clamp(min=1), torch.full_like(total, torch.nan))


def _cells(table: TokenTable, energy: torch.Tensor, c: torch.Tensor, rewards: GroupRewards,
           bucket: torch.Tensor, K: int, permutations: int, seed: int) -> _Cells:
    C = K * N_ROLES
    cell = bucket * N_ROLES + table.role  # (M,)
    used = rewards.used[table.group].to(energy.dtype)  # (M,)
    n_used = group_sum(used, cell, C)  # (C,)
    pearson_sum, pearson_n = _pearson(table, energy, cell, C)
    return _Cells(
        n_used=n_used,
        n_all=group_sum(torch.ones_like(energy), cell, C),
        signal=group_sum(c.abs(), cell, C),
        signed=group_sum(c, cell, C),
        sum_e=group_sum(energy, cell, C),
        pearson_sum=pearson_sum,
        pearson_n=pearson_n,
        spearman=_spearman(table, energy, cell, C, rewards),
        null_ratio=_null_ratio(table, energy, rewards, cell, C, n_used, permutations, seed),
    )


def _split(cells: _Cells, b: int, total_tokens: float, total_signal: float) -> SplitStats:
    sl = slice(b * N_ROLES, (b + 1) * N_ROLES)
    n_used, signal = float(cells.n_used[sl].sum()), float(cells.signal[sl].sum())
    roles = {}
    for k, key in enumerate(ROLE_KEYS):
        i = b * N_ROLES + k
        tok_share = _div(float(cells.n_used[i]), n_used)
        sig_share = _div(float(cells.signal[i]), signal)
        pn = int(cells.pearson_n[i])
        rho, sn = cells.spearman[i]
        roles[key] = RoleStats(
            n_tokens=int(cells.n_used[i]),
            token_share=tok_share,
            signal=float(cells.signal[i]),
            signal_share=sig_share,
            ratio=_div(sig_share, tok_share) if sig_share is not None and tok_share else None,
            null_ratio=_opt(float(cells.null_ratio[i])),
            signed_signal=float(cells.signed[i]),
            mean_energy=_div(float(cells.sum_e[i]), float(cells.n_all[i])),
            pearson=float(cells.pearson_sum[i]) / pn if pn else None,
            pearson_prompts=pn,
            spearman=rho,
            spearman_prompts=sn,
        )
    return SplitStats(
        n_tokens=int(n_used),
        n_tokens_all=int(cells.n_all[sl].sum()),
        signal=signal,
        token_share_of_total=_div(n_used, total_tokens),
        signal_share_of_total=_div(signal, total_signal),
        roles=roles,
    )


def source_stats(batch: RolloutBatch, source: str, table: TokenTable | None = None,
                 null_permutations: int = 16, seed: int = 0) -> SourceStats:
    """The diagnostic for one energy source (arguments as compute_bottleneck)."""
    table = token_table(batch) if table is None else table
    rewards = group_rewards(table)
    energy = flat_energy(batch, table, source)  # (M,)
    c = flat_contributions(table, energy, rewards)  # (M,)
    overall_cells = _cells(table, energy, c, rewards, torch.zeros_like(table.turn), 1, null_permutations, seed)
    total_tokens, total_signal = float(overall_cells.n_used.sum()), float(overall_cells.signal.sum())
    overall = _split(overall_cells, 0, total_tokens, total_signal)
    by_turn: dict[int, SplitStats] = {}
    if table.n_tokens:
        K = int(table.turn.max()) + 1
        turn_cells = _cells(table, energy, c, rewards, table.turn, K, null_permutations, seed)
        for t in sorted(set(table.turn.tolist())):
            by_turn[t] = _split(turn_cells, t, total_tokens, total_signal)
    return SourceStats(source=source, overall=overall, by_turn=by_turn)


def compute_bottleneck(batch: RolloutBatch, sources: Sequence[str] | None = None,
                       null_permutations: int = 16, seed: int = 0) -> BottleneckStats:
    """The diagnostic for each source in `sources` (default: `available_sources(batch)`).

    `null_permutations` shuffles of the rewards within each group (seeded by `seed`) give each role's
    null_ratio; 0 skips them.
    Raises ValueError on a batch whose shapes or roles do not fit, or a source it cannot score.
    """
    table = token_table(batch)
    rewards = group_rewards(table)
    names = tuple(available_sources(batch) if sources is None else sources)
    if null_permutations < 0:
        raise ValueError(f"null_permutations must be >= 0, got {null_permutations}")
    n_used = int(rewards.used.sum())
    return BottleneckStats(
        n_groups=table.n_groups,
        n_groups_used=n_used,
        n_groups_skipped=table.n_groups - n_used,
        n_trajectories=table.n_traj,
        n_generated_tokens=table.n_tokens,
        null_permutations=null_permutations,
        sources={name: source_stats(batch, name, table, null_permutations, seed) for name in names},
    )
