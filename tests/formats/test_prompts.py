import pytest

from agentbench_af.api import make
from agentbench_af.formats.prompts import ANSWER_FORMAT, system_prompt, turn_message


def test_system_prompt_has_rules_format_and_limit():
    env = make("FrozenLake-4x4-v0")
    text = system_prompt(env)
    assert text.startswith(type(env).rules(env.variant)) and "FrozenLake" in text
    assert "Answer format: <think> [your thoughts] </think> <answer> [your answer] </answer>" in text
    assert ANSWER_FORMAT in text
    assert text.endswith("Give up to 2 actions per turn, separated by ||.")
    assert system_prompt("FrozenLake-4x4-v0") == text


def test_system_prompt_follows_the_variant():
    one = system_prompt(make("FrozenLake-4x4-v0", max_actions_per_turn=1))
    assert one.endswith("Give one action per turn.") and "||" not in one.splitlines()[-1]
    assert "slippery" in system_prompt(make("FrozenLake-4x4-slippery-v0"))
    assert "up to 3 actions" in system_prompt(make("FrozenLake-8x8-v0"))


def test_system_prompt_rejects_non_env():
    with pytest.raises(TypeError):
        system_prompt(42)  # type: ignore[arg-type]


def test_turn_message_exact_text():
    obs = "P _\n_ G"
    assert turn_message(obs, 1, 10, 2) == "Turn 1:\nP _\n_ G\nYou have 10 actions left; give at most 2 this turn."
    # fewer actions left than the per-turn limit: the message says so
    assert turn_message(obs, 5, 1, 2).endswith("You have 1 actions left; give at most 1 this turn.")


@pytest.mark.parametrize("turn,left,per_turn", [(0, 3, 2), (1, -1, 2), (1, 3, 0)])
def test_turn_message_rejects_bad_numbers(turn, left, per_turn):
    with pytest.raises(ValueError):
        turn_message("x", turn, left, per_turn)
