"""A bigram "language model" for the gradient tests: logits of the next token = W[current token].

Its gradients can be worked out by hand: d log softmax(W[x])[y] / d W[x] = onehot(y) - softmax(W[x]).
It takes the keyword arguments the training forward pass (`token_stats`) passes to a transformers model.
Also: planted rollouts whose reward is made by the action token, by a reasoning token, or by neither.
Import as `from bigram import ...` (pytest puts this folder on sys.path).
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import torch
from diag_factory import Traj, Turn
from torch import nn


class Bigram(nn.Module):
    def __init__(self, vocab: int, scale: float = 0.0, seed: int = 0):
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        self.W = nn.Parameter(torch.randn(vocab, vocab, generator=gen) * scale)

    def forward(self, input_ids, attention_mask=None, position_ids=None, output_hidden_states=False, use_cache=False):
        return SimpleNamespace(logits=self.W[input_ids])  # (B, T, V)


WORDS = [f"w{i} " for i in range(6)]


def planted_trajs(seed: int, signal: str, n_groups: int = 16, group_size: int = 8, n_turns: int = 2) -> list[Traj]:
    """Per turn: prompt `obs`, 4 reasoning words, a format token `<a>`, an action `right`/`wrong`.

    signal="action": the action is right with a per-group probability and the reward is the fraction of
    right actions; the reasoning words are uniform and unrelated. signal="reasoning": the first reasoning
    word is `good`/`bad` and makes the reward; actions are uniform. signal="none": everything is uniform
    and the reward is a coin flip per rollout. Energies: 0.5 for a rewarded choice, 1.5 otherwise, 1.0 for
    the rest (they only feed the correlations)."""
    rng = random.Random(seed)
    trajs = []
    for g in range(n_groups):
        p = rng.uniform(0.25, 0.75)
        for _ in range(group_size):
            turns, right = [], 0
            for _ in range(n_turns):
                hit = rng.random() < p
                words = [rng.choice(WORDS) for _ in range(4)]
                action = rng.choice(["right ", "wrong "])
                if signal == "action":
                    action = "right " if hit else "wrong "
                elif signal == "reasoning":
                    words[0] = "good " if hit else "bad "
                right += hit
                e_r = [0.5 if hit and signal == "reasoning" else 1.5 if signal == "reasoning" else 1.0] + [1.0] * 3
                e_a = [0.5 if hit and signal == "action" else 1.5 if signal == "action" else 1.0]
                turns.append(Turn("rrrrfa", e_r + [1.0] + e_a, n_prompt=1, texts=["obs "] + words + ["<a> ", action]))
            reward = right / n_turns if signal != "none" else float(rng.random() < 0.5)
            trajs.append(Traj(g, reward, turns))
    return trajs
