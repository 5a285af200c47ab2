"""The RAGEN-style prompts: one system prompt per environment and one user message per turn.

- `system_prompt(env)`: the environment's rules (`type(env).rules(env.variant)`), the answer format
  `<think> [your thoughts] </think> <answer> [your answer] </answer>`, and the per-turn action limit
  with the `||` separator.
- `turn_message(obs, turn, actions_left, max_actions_per_turn)`: `Turn k:`, the observation, and how
  many actions are left (in the episode, and at most how many this turn).

Both are deliberately short: tiny models read them on every turn. Left out: few-shot examples, a
response-length hint, and any chat-template markup (that is `formats.chat`'s job).
"""

from __future__ import annotations

from agentbench_af.api.env import TextEnv
from agentbench_af.api.parse import ACTION_SEPARATOR, ANSWER_CLOSE, ANSWER_OPEN, THINK_CLOSE, THINK_OPEN

ANSWER_FORMAT = f"{THINK_OPEN} [your thoughts] {THINK_CLOSE} {ANSWER_OPEN} [your answer] {ANSWER_CLOSE}"


def _limit_line(max_actions_per_turn: int) -> str:
    if max_actions_per_turn == 1:
        return "Give one action per turn."
    return f"Give up to {max_actions_per_turn} actions per turn, separated by {ACTION_SEPARATOR}."


def system_prompt(env: TextEnv | str) -> str:
    """The system prompt for an environment instance (or a registered id, which is built first)."""
    if isinstance(env, str):
        from agentbench_af.api.registry import make

        env = make(env)
    if not isinstance(env, TextEnv):
        raise TypeError(f"system_prompt needs a TextEnv or an environment id, got {type(env).__name__}")
    variant = env.variant
    rules = type(env).rules(variant).strip()
    return f"{rules}\nAnswer format: {ANSWER_FORMAT}\n{_limit_line(variant.max_actions_per_turn)}"


def turn_message(obs: str, turn: int, actions_left: int, max_actions_per_turn: int) -> str:
    """The user message of turn `turn` (1-based: the message after `reset` is turn 1)."""
    if turn < 1:
        raise ValueError(f"turn is 1-based, got {turn}")
    if actions_left < 0 or max_actions_per_turn < 1:
        raise ValueError(f"bad limits: actions_left={actions_left}, max_actions_per_turn={max_actions_per_turn}")
    now = min(actions_left, max_actions_per_turn)
    return f"Turn {turn}:\n{obs}\nYou have {actions_left} actions left; give at most {now} this turn."
