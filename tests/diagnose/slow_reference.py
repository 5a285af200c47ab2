"""The diagnostic written as plain Python loops over tokens, trajectories and groups (docs/method.md read
literally), to check the vectorised `compute_bottleneck` against. Returns the same dict as
`BottleneckStats.to_dict()` (with null_permutations = 0) minus `bottleneck_ratio`, int turn keys."""

from __future__ import annotations

import statistics
from collections import defaultdict

from scipy import stats as sps

from agentbench_af.formats.roles import Role

ROLES = {int(Role.REASONING): "reasoning", int(Role.ACTION): "action", int(Role.FORMAT): "format"}
TOL = 1e-9


def constant(values) -> bool:
    hi, lo = max(values), min(values)
    return hi - lo <= TOL * max(abs(hi), abs(lo))


def energies(batch, source):
    B, T = batch.input_ids.shape
    out = []  # (traj, role name, turn, energy)
    for b in range(B):
        for t in range(T):
            if not bool(batch.response_mask[b, t]):
                continue
            if source == "old":
                e = -float(batch.old_logprobs[b, t])
            elif source == "ref":
                e = -float(batch.ref_logprobs[b, t])
            else:
                e = float(batch.entropy[b, t])
            out.append((int(batch.sample_traj[b]), ROLES[int(batch.roles[b, t])], int(batch.turn_index[b, t]), e))
    return out


def split_stats(tokens, c, group_of, reward, used, var_r, total_tokens, total_signal):
    """tokens: [(traj, role, turn, e)] of one split; c: matching contributions."""
    n_used = sum(1 for (tr, *_rest) in tokens if used[group_of[tr]])
    signal = sum(abs(x) for x in c)
    roles = {}
    for role in ("reasoning", "action", "format"):
        idx = [i for i, tok in enumerate(tokens) if tok[1] == role]
        n_role = sum(1 for i in idx if used[group_of[tokens[i][0]]])
        sig = sum(abs(c[i]) for i in idx)
        tok_share = n_role / n_used if n_used else None
        sig_share = sig / signal if signal else None
        # per-prompt Pearson
        per_traj = defaultdict(list)
        for i in idx:
            per_traj[tokens[i][0]].append(tokens[i][3])
        by_group = defaultdict(list)
        for tr, es in per_traj.items():
            by_group[group_of[tr]].append((sum(es) / len(es), reward[tr]))
        rs = []
        for pairs in by_group.values():
            xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
            if len(pairs) >= 2 and not constant(xs) and not constant(ys):
                rs.append(statistics.correlation(xs, ys))
        # across-prompt Spearman
        group_e = defaultdict(list)
        for i in idx:
            group_e[group_of[tokens[i][0]]].append(tokens[i][3])
        gs = sorted(group_e)
        xs = [sum(group_e[g]) / len(group_e[g]) for g in gs]
        vs = [var_r[g] for g in gs]
        rho = None
        if len(gs) >= 3 and not constant(xs) and not constant(vs):
            rho = float(sps.spearmanr(vs, xs).statistic)
        roles[role] = {
            "n_tokens": n_role,
            "token_share": tok_share,
            "signal": sig,
            "signal_share": sig_share,
            "ratio": sig_share / tok_share if sig_share is not None and tok_share else None,
            "null_ratio": None,  # checked with null_permutations = 0
            "signed_signal": sum(c[i] for i in idx),
            "mean_energy": sum(tokens[i][3] for i in idx) / len(idx) if idx else None,
            "pearson": sum(rs) / len(rs) if rs else None,
            "pearson_prompts": len(rs),
            "spearman": rho,
            "spearman_prompts": len(gs),
        }
    return {
        "n_tokens": n_used,
        "n_tokens_all": len(tokens),
        "signal": signal,
        "token_share_of_total": n_used / total_tokens if total_tokens else None,
        "signal_share_of_total": signal / total_signal if total_signal else None,
        "roles": roles,
    }


def slow_bottleneck(batch, sources):
    group_of = [int(g) for g in batch.traj_group]
    reward = [float(r) for r in batch.traj_return]
    members = defaultdict(list)
    for tr, g in enumerate(group_of):
        members[g].append(tr)
    mean_r, var_r, used = {}, {}, {}
    for g, trs in members.items():
        rs = [reward[tr] for tr in trs]
        mean_r[g] = sum(rs) / len(rs)
        used[g] = not constant(rs)
        var_r[g] = sum((r - mean_r[g]) ** 2 for r in rs) / len(rs) if used[g] else 0.0
    out = {"n_groups": len(members), "n_groups_used": sum(used.values()),
           "n_groups_skipped": len(members) - sum(used.values()), "n_trajectories": len(group_of),
           "n_generated_tokens": 0, "null_permutations": 0, "sources": {}}
    for source in sources:
        tokens = energies(batch, source)
        out["n_generated_tokens"] = len(tokens)
        group_tokens = defaultdict(list)
        for tok in tokens:
            group_tokens[group_of[tok[0]]].append(tok[3])
        c = []
        for tr, _role, _turn, e in tokens:
            g = group_of[tr]
            mean_e = sum(group_tokens[g]) / len(group_tokens[g])
            c.append((e - mean_e) * (reward[tr] - mean_r[g]) if used[g] else 0.0)
        total_tokens = sum(1 for tok in tokens if used[group_of[tok[0]]])
        total_signal = sum(abs(x) for x in c)
        overall = split_stats(tokens, c, group_of, reward, used, var_r, total_tokens, total_signal)
        by_turn = {}
        for turn in sorted({tok[2] for tok in tokens}):
            idx = [i for i, tok in enumerate(tokens) if tok[2] == turn]
            by_turn[turn] = split_stats([tokens[i] for i in idx], [c[i] for i in idx], group_of, reward,
                                        used, var_r, total_tokens, total_signal)
        out["sources"][source] = {"source": source, "overall": overall, "by_turn": by_turn}
    return out
