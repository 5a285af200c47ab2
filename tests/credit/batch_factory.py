"""Build `RolloutBatch` instances for tests: by hand (`build_batch`) or at random (`random_batch`).

Import from tests in this folder as `from batch_factory import ...` (pytest puts the folder on sys.path);
from elsewhere, `from tests.credit.batch_factory import ...` with the repository root on sys.path
(`python -m pytest`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from agentbench_af.formats.roles import Role
from agentbench_af.rollout.batch import RolloutBatch

ROLE_CODES = {"p": Role.PROMPT, "r": Role.REASONING, "a": Role.ACTION, "f": Role.FORMAT}


@dataclass
class SampleSpec:
    """One sample row. `roles` has one letter per token (p prompt, r reasoning, a action, f format);
    per-token lists have the same length (values at prompt positions are ignored: zeroed)."""

    traj: int
    roles: str
    order: int = 0
    logprobs: Sequence[float] | None = None
    entropy: Sequence[float] | None = None
    rewards: Sequence[float] | None = None
    values: Sequence[float] | None = None
    ref_logprobs: Sequence[float] | None = None
    turns: Sequence[int] | None = None  # turn of each token (prompt positions ignored); default 0


def _row(spec_values: Sequence[float] | None, n: int, width: int, gen: torch.Tensor) -> torch.Tensor:
    out = torch.zeros(width)
    if spec_values is not None:
        if len(spec_values) != n:
            raise ValueError(f"per-token list of length {len(spec_values)} for a sample of {n} tokens")
        out[:n] = torch.as_tensor(list(spec_values), dtype=torch.float32)
    return torch.where(gen, out, torch.zeros_like(out))


def build_batch(
    samples: Sequence[SampleSpec],
    traj_group: Sequence[int],
    traj_return: Sequence[float],
    traj_success: Sequence[bool] | None = None,
    turn_obs_key: Sequence[Sequence[int]] | None = None,
    pad: int = 1,
) -> RolloutBatch:
    """Rows in the given order, right-padded by `pad` extra columns beyond the longest sample."""
    width = max(len(s.roles) for s in samples) + pad
    B = len(samples)
    cols: dict[str, list[torch.Tensor]] = {k: [] for k in ("lp", "ent", "rew", "val", "ref")}
    roles = torch.full((B, width), int(Role.PROMPT), dtype=torch.int8)  # (B, T)
    attention = torch.zeros((B, width), dtype=torch.bool)  # (B, T)
    response = torch.zeros((B, width), dtype=torch.bool)  # (B, T)
    turn_index = torch.full((B, width), -1, dtype=torch.long)  # (B, T)
    for b, s in enumerate(samples):
        n = len(s.roles)
        codes = torch.as_tensor([int(ROLE_CODES[c]) for c in s.roles], dtype=torch.int8)
        roles[b, :n] = codes
        attention[b, :n] = True
        response[b, :n] = codes != int(Role.PROMPT)
        turns = torch.as_tensor(list(s.turns) if s.turns is not None else [0] * n, dtype=torch.long)
        turn_index[b, :n] = torch.where(response[b, :n], turns, torch.full_like(turns, -1))
        for key, values in (
            ("lp", s.logprobs),
            ("ent", s.entropy),
            ("rew", s.rewards),
            ("val", s.values),
            ("ref", s.ref_logprobs),
        ):
            cols[key].append(_row(values, n, width, response[b]))
    n_traj = len(traj_group)
    obs = None
    if turn_obs_key is not None:
        obs = torch.as_tensor([list(k) for k in turn_obs_key], dtype=torch.long).view(n_traj, -1)
    return RolloutBatch(
        input_ids=torch.where(attention, 5, 0).long(),
        attention_mask=attention,
        response_mask=response,
        roles=roles,
        old_logprobs=torch.stack(cols["lp"]),
        entropy=torch.stack(cols["ent"]),
        token_rewards=torch.stack(cols["rew"]),
        turn_index=turn_index,
        sample_traj=torch.as_tensor([s.traj for s in samples], dtype=torch.long),
        sample_order=torch.as_tensor([s.order for s in samples], dtype=torch.long),
        traj_group=torch.as_tensor(list(traj_group), dtype=torch.long),
        traj_return=torch.as_tensor(list(traj_return), dtype=torch.float32),
        traj_success=torch.as_tensor(
            list(traj_success) if traj_success else [False] * n_traj, dtype=torch.bool
        ),
        ref_logprobs=torch.stack(cols["ref"]),
        values=torch.stack(cols["val"]),
        turn_obs_key=obs,
    )


def random_batch(
    seed: int,
    n_groups: int = 3,
    max_group_size: int = 4,
    max_turns: int = 3,
    context_mode: str = "full",
    n_obs_keys: int = 3,
) -> RolloutBatch:
    """A random batch shaped like `trajectories_to_batch` output, rows shuffled.

    Groups of 1..max_group_size trajectories (group ids not contiguous), 1..max_turns turns each, every
    turn a random prompt/observation stretch then 1..6 generated tokens of random roles; the turn's
    reward sits on its last generated token and traj_return is their sum. full mode: one sample per
    trajectory; window mode: one sample per turn. Observation keys come from `n_obs_keys` values, so
    step groups collide; all of values, ref_logprobs and turn_obs_key are filled.
    """
    rng = random.Random(seed)
    gen_roles = "rrraaf"
    samples: list[SampleSpec] = []
    traj_group: list[int] = []
    traj_return: list[float] = []
    obs_keys: list[list[int]] = []
    for g in range(n_groups):
        for _ in range(rng.randint(1, max_group_size)):
            t_id = len(traj_group)
            traj_group.append(3 * g + 7)
            n_turns = rng.randint(1, max_turns)
            obs_keys.append(
                [rng.randrange(n_obs_keys) for _ in range(n_turns)] + [-1] * (max_turns - n_turns)
            )
            total = 0.0
            full: dict[str, list] = {
                "roles": [],
                "lp": [],
                "ent": [],
                "rew": [],
                "val": [],
                "ref": [],
                "turn": [],
            }
            for k in range(n_turns):
                piece: dict[str, list] = {key: [] for key in full}
                n_prompt, n_gen = (
                    rng.randint(1 if k == 0 or context_mode == "full" else 2, 4),
                    rng.randint(1, 6),
                )
                reward = rng.choice([0.0, 0.0, 1.0, -0.5, rng.uniform(-1, 1)])
                total += reward
                for i in range(n_prompt + n_gen):
                    is_gen = i >= n_prompt
                    piece["roles"].append(rng.choice(gen_roles) if is_gen else "p")
                    piece["lp"].append(-rng.expovariate(1.0))
                    piece["ent"].append(rng.choice([rng.uniform(0, 3), 0.5]))  # repeated values test ties
                    piece["rew"].append(reward if i == n_prompt + n_gen - 1 else 0.0)
                    piece["val"].append(rng.uniform(-1, 1))
                    piece["ref"].append(-rng.expovariate(1.0))
                    piece["turn"].append(k)
                if context_mode == "window":
                    samples.append(
                        SampleSpec(
                            t_id,
                            "".join(piece["roles"]),
                            k,
                            piece["lp"],
                            piece["ent"],
                            piece["rew"],
                            piece["val"],
                            piece["ref"],
                            piece["turn"],
                        )
                    )
                for key in full:
                    full[key].extend(piece[key])
            if context_mode == "full":
                samples.append(
                    SampleSpec(
                        t_id,
                        "".join(full["roles"]),
                        0,
                        full["lp"],
                        full["ent"],
                        full["rew"],
                        full["val"],
                        full["ref"],
                        full["turn"],
                    )
                )
            traj_return.append(total)
    rng.shuffle(samples)
    return build_batch(samples, traj_group, traj_return, turn_obs_key=obs_keys, pad=rng.randint(0, 3))
