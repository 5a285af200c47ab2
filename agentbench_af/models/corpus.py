"""Text from environments' experts: demonstrations for the SFT warm start, a corpus for the tokenizer.

- `expert_demonstrations(env_id, seeds) -> list[Demonstration]`: one expert episode per seed, each a
  system prompt and `(user message, response text)` pairs, rendered with `formats.prompts` and
  `formats.parse.format_response` exactly as the rollout collector renders them.
- `environment_corpus(env_ids, episodes_per_env, seed, env_kwargs) -> list[str]`: the system prompts,
  turn messages and expert responses of `episodes_per_env` episodes per environment (seeds drawn from
  the variant's training range), plus the feedback lines of a few invalid turns, so the tokenizer sees
  every kind of text the policy will read. `env_kwargs` (env id -> variant overrides) builds each
  environment as the run does, so an override that changes the expert's sentences (Sudoku's
  `expert_reasoning`, say) changes the corpus too. Texts keep their natural frequencies (no
  de-duplication).

Left out: any text not produced by the environments (the tokenizer is byte-level, so unseen text still
encodes, just in more tokens).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentbench_af.api.registry import make
from agentbench_af.formats.parse import format_response
from agentbench_af.formats.prompts import turn_message

#: responses played once per environment so the corpus holds the feedback of invalid turns
INVALID_RESPONSES = ("", "<think>?</think><answer>Jump</answer>", "<answer>a || b || c || d || e</answer>")


@dataclass(frozen=True)
class Demonstration:
    """One expert episode: the system prompt and the (user message, response text) of every turn."""

    env_id: str
    seed: int
    system: str
    turns: tuple[tuple[str, str], ...]
    success: bool
    total_reward: float

    def messages(self) -> list[dict[str, str]]:
        """The episode as chat messages (system, user, assistant, user, assistant, ...)."""
        out = [{"role": "system", "content": self.system}]
        for user, response in self.turns:
            out += [{"role": "user", "content": user}, {"role": "assistant", "content": response}]
        return out


def expert_demonstration(env_id: str, seed: int, **env_kwargs) -> Demonstration:
    """Play the environment's expert from `reset(seed=seed)` to the end of the episode."""
    env = make(env_id, **env_kwargs)
    obs, _ = env.reset(seed=int(seed))
    system = env.system_prompt()
    turns: list[tuple[str, str]] = []
    total, success, done = 0.0, False, False
    while not done:
        message = turn_message(obs, env.turn + 1, env.actions_left, env.variant.max_actions_per_turn)
        expert = env.expert_turn()
        response = format_response(expert.reasoning, expert.actions)
        obs, reward, terminated, truncated, info = env.step(response)
        turns.append((message, response))
        total += float(reward)
        success = bool(info["success"])
        done = terminated or truncated
    return Demonstration(env_id, int(seed), system, tuple(turns), success, total)


def expert_demonstrations(env_id: str, seeds: Iterable[int], **env_kwargs) -> list[Demonstration]:
    """One expert episode per seed, in the order of `seeds`."""
    return [expert_demonstration(env_id, s, **env_kwargs) for s in seeds]


def tokenizer_corpus_seeds(env_id: str, n: int, seed: int, **env_kwargs: Any) -> list[int]:
    """The episodes whose expert text trains the tokenizer: `n` distinct seeds of the variant's training
    range drawn from `seed`, in draw order (a large range is sampled with replacement until n distinct).
    RL and SFT draw their seeds with `rollout.seeds.draw_train_seeds` instead."""
    lo, hi = make(env_id, **env_kwargs).variant.train_seeds
    n = min(n, hi - lo)
    rng = np.random.default_rng(seed)
    if hi - lo <= 4 * n:  # a small range: sample without replacement
        return sorted(int(s) for s in rng.choice(np.arange(lo, hi), size=n, replace=False))
    drawn: dict[int, None] = {}  # a large range: draw until n distinct, keeping the draw order
    while len(drawn) < n:
        for s in rng.integers(lo, hi, size=n).tolist():
            if len(drawn) < n:
                drawn.setdefault(int(s), None)
    return list(drawn)


def _invalid_turn_texts(env_id: str, seed: int, **env_kwargs: Any) -> list[str]:
    texts = []
    for response in INVALID_RESPONSES:
        env = make(env_id, **env_kwargs)
        env.reset(seed=seed)
        obs, *_ = env.step(response)
        texts.append(turn_message(obs, env.turn + 1, env.actions_left, env.variant.max_actions_per_turn))
    return texts


def environment_corpus(
    env_ids: Sequence[str], episodes_per_env: int = 200, seed: int = 0,
    env_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[str]:
    """Texts of expert episodes of each environment, for training a tokenizer (deterministic);
    `env_kwargs[env_id]` are that environment's variant overrides (none when absent)."""
    if episodes_per_env < 1:
        raise ValueError(f"episodes_per_env must be >= 1, got {episodes_per_env}")
    texts: list[str] = []
    for k, env_id in enumerate(env_ids):
        kwargs = dict((env_kwargs or {}).get(env_id, {}))
        seeds = tokenizer_corpus_seeds(env_id, episodes_per_env, seed + 1_000_003 * k, **kwargs)
        for demo in expert_demonstrations(env_id, seeds, **kwargs):
            texts.append(demo.system)
            for user, response in demo.turns:
                texts += [user, response]
        texts += _invalid_turn_texts(env_id, seeds[0], **kwargs)
    return texts
