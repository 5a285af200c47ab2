"""The RAGEN-style prompts: one system prompt per environment and one user message per turn.

- `system_prompt(rules, max_actions_per_turn)`: an environment's rules for its variant, the answer format
  `<think> [your thoughts] </think> <answer> [your answer] </answer>`, and the per-turn action limit
  with the `||` separator. It takes the text and the one number it shows, not an environment: `formats`
  sits below `api` (`api.env.TextEnv.system_prompt()` calls it with the instance's rules and variant).
- `turn_message(obs, turn, actions_left, max_actions_per_turn)`: `Turn k:`, the observation, and how
  many actions are left (in the episode, and at most how many this turn).

Both are deliberately short: tiny models read them on every turn. Left out: few-shot examples, a
response-length hint, and any chat-template markup (that is `formats.chat`'s job).
"""

from __future__ import annotations

from agentbench_af.formats.parse import ACTION_SEPARATOR, ANSWER_CLOSE, ANSWER_OPEN, THINK_CLOSE, THINK_OPEN

ANSWER_FORMAT = f"{THINK_OPEN} [your thoughts] {THINK_CLOSE} {ANSWER_OPEN} [your answer] {ANSWER_CLOSE}"


def _limit_line(max_actions_per_turn: int) -> str:
    if max_actions_per_turn == 1:
        return "Give one action per turn."
    return f"Give up to {max_actions_per_turn} actions per turn, separated by {ACTION_SEPARATOR}."


def system_prompt(rules: str, max_actions_per_turn: int) -> str:
    """The system prompt: `rules` (an environment's `rules(variant)`), the answer format, the action limit."""
    if not isinstance(rules, str) or not rules.strip():
        raise ValueError(f"system_prompt needs the environment's rules as non-empty text, got {rules!r}")
    if isinstance(max_actions_per_turn, bool) or not isinstance(max_actions_per_turn, int) or max_actions_per_turn < 1:
        raise ValueError(f"max_actions_per_turn must be an integer >= 1, got {max_actions_per_turn!r}")
    return f"{rules.strip()}\nAnswer format: {ANSWER_FORMAT}\n{_limit_line(max_actions_per_turn)}"


def turn_message(obs: str, turn: int, actions_left: int, max_actions_per_turn: int) -> str:
    """The user message of turn `turn` (1-based: the message after `reset` is turn 1)."""
    if turn < 1:
        raise ValueError(f"turn is 1-based, got {turn}")
    if actions_left < 0 or max_actions_per_turn < 1:
        raise ValueError(f"bad limits: actions_left={actions_left}, max_actions_per_turn={max_actions_per_turn}")
    now = min(actions_left, max_actions_per_turn)
    return f"Turn {turn}:\n{obs}\nYou have {actions_left} actions left; give at most {now} this turn."
