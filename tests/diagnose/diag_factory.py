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

from agentbench_af.formats.roles import Role
from agentbench_af.rollout.batch import RolloutBatch

CODES = {"r": Role.REASONING, "a": Role.ACTION, "f": Role.FORMAT}
ENTROPY_OFFSET = 0.25  # entropy = energy * 0.5 + ENTROPY_OFFSET: a second source with other numbers
REF_OFFSET = 0.5  # ref energy = energy + REF_OFFSET


@dataclass
class Turn:
    roles: str
    energies: Sequence[float]
    n_prompt: int = 2
    texts: Sequence[str] | None = None  # one string per prompt token then per generated token (html tests)


@dataclass
class Traj:
    group: int
    reward: float
    turns: list[Turn] = field(default_factory=list)


def make_batch(trajs: Sequence[Traj], mode: str = "full", shuffle_seed: int | None = None,
               pad: int = 1, with_ref: bool = True) -> RolloutBatch:
    return make_batch_and_texts(trajs, mode, shuffle_seed, pad, with_ref)[0]


def make_batch_and_texts(trajs: Sequence[Traj], mode: str = "full", shuffle_seed: int | None = None,
                         pad: int = 1, with_ref: bool = True) -> tuple[RolloutBatch, list[list[str]]]:
    """The batch and each row's token strings (from Turn.texts, else "p3" / "r5" style placeholders)."""
    rows: list[tuple[int, int, list[tuple[int, int | None, float, str]]]] = []  # traj, order, tokens
    for ti, tr in enumerate(trajs):
        pieces = []
        for k, turn in enumerate(tr.turns):
            if len(turn.roles) != len(turn.energies):
                raise ValueError("one energy per generated token")
            n_tok = turn.n_prompt + len(turn.roles)
            texts = list(turn.texts) if turn.texts is not None else [
                f"p{i} " for i in range(turn.n_prompt)] + [f"{ch}{i} " for i, ch in enumerate(turn.roles)]
            if len(texts) != n_tok:
                raise ValueError(f"Turn.texts has {len(texts)} strings for {n_tok} tokens")
            piece = [(int(Role.PROMPT), None, 0.0, texts[i]) for i in range(turn.n_prompt)]
            piece += [(int(CODES[ch]), k, float(e), texts[turn.n_prompt + i])
                      for i, (ch, e) in enumerate(zip(turn.roles, turn.energies, strict=True))]
            pieces.append(piece)
        if mode == "full":
            rows.append((ti, 0, [tok for p in pieces for tok in p] or [(int(Role.PROMPT), None, 0.0, "")]))
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
    vocab: dict[str, int] = {}  # one id per distinct token string
    for b, (_, _, toks) in enumerate(rows):
        for t, (role, turn, e, text) in enumerate(toks):
            ids[b, t] = vocab.setdefault(text, 10 + len(vocab))
            attn[b, t] = True
            roles[b, t] = role
            if turn is not None:
                resp[b, t] = True
                energy[b, t] = e
                turn_index[b, t] = turn
    batch = RolloutBatch(
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
    return batch, [[tok[3] for tok in r[2]] for r in rows]


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


SYSTEM = ("You are an agent on a frozen lake . Reach the goal G without falling into a hole H . Think "
          "inside <think> </think> then give one move ( left , right , up , down ) inside <answer> </answer> . "
          ) * 3
GRID = ["S F F\nF H F\nF F G\n", "F S F\nF H F\nF F G\n", "F F F\nF H S\nF F G\n"]
THOUGHTS = [["I", " am", " at", " the", " top", " left", ",", " the", " hole", " is", " below", " right", "."],
            ["Going", " down", " keeps", " me", " away", " from", " H", " &", " closer", " to", " G", "."],
            ["The", " goal", " is", " at", " row", " 3", ";", " 2", " < ", " 3", " so", " move", " down", "."]]


def demo_trajs(seed: int, n_groups: int = 3, group_size: int = 3, n_turns: int = 2) -> list[Traj]:
    """FrozenLake-looking rollouts with token strings: a long system prompt (folded in the page), a grid
    observation per turn, <think> reasoning, <answer> move; the right move has low energy and earns the
    reward. The last group has equal rewards (skipped). Strings include <, &, quotes, newlines, an empty
    piece and a control character, to exercise escaping."""
    rng = random.Random(seed)
    trajs = []
    for g in range(n_groups):
        for i in range(group_size):
            turns, right = [], 0
            for k in range(n_turns):
                prompt = ([w + " " for w in SYSTEM.split()] if k == 0 else []) + ["\nuser: "] + list(GRID[k % 3])
                prompt += ['"Your move?"\n', "assistant:\n"]
                ok = rng.random() < 0.5 if g < n_groups - 1 else True
                right += ok
                thought = THOUGHTS[(g + i + k) % 3]
                move = "down" if ok else "right"
                gen = ["<think>"] + thought + ["</think>", "\n", "<answer>", move, "</answer>", "", "<|im_end|>\x01"]
                roles = "f" + "r" * len(thought) + "fff" + "a" + "fff"
                energies = ([0.2] + [rng.uniform(0.3, 2.5) for _ in thought] + [0.1, 0.05, 0.1]
                            + [0.2 if ok else 2.3] + [0.05, 0.0, 0.02])
                turns.append(Turn(roles, energies, n_prompt=len(prompt), texts=prompt + gen))
            reward = 1.0 if g == n_groups - 1 else right / n_turns
            trajs.append(Traj(g, reward, turns))
    return trajs
