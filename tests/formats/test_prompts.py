import pytest

from agentbench_af.api import make
from agentbench_af.formats.prompts import ANSWER_FORMAT, system_prompt, turn_message


def test_system_prompt_exact_text():
    assert system_prompt("Reach G.\n", 1) == (
        "Reach G.\nAnswer format: <think> [your thoughts] </think> <answer> [your answer] </answer>\n"
        "Give one action per turn."
    )
    assert system_prompt("Reach G.", 3).endswith("\nGive up to 3 actions per turn, separated by ||.")


def test_an_environment_prompts_with_its_rules_and_variant():
    env = make("FrozenLake-4x4-v0")
    text = env.system_prompt()
    assert text == system_prompt(type(env).rules(env.variant), env.variant.max_actions_per_turn)
    assert text.startswith(type(env).rules(env.variant)) and "FrozenLake" in text
    assert ANSWER_FORMAT in text
    assert text.endswith("Give up to 2 actions per turn, separated by ||.")


def test_the_prompt_follows_the_variant():
    one = make("FrozenLake-4x4-v0", max_actions_per_turn=1).system_prompt()
    assert one.endswith("Give one action per turn.") and "||" not in one.splitlines()[-1]
    assert "slippery" in make("FrozenLake-4x4-slippery-v0").system_prompt()
    assert "up to 3 actions" in make("FrozenLake-8x8-v0").system_prompt()


@pytest.mark.parametrize("rules,per_turn", [("", 1), ("  \n", 2), (42, 1), ("Reach G.", 0), ("Reach G.", True)])
def test_system_prompt_rejects_bad_input(rules, per_turn):
    with pytest.raises(ValueError):
        system_prompt(rules, per_turn)


def test_turn_message_exact_text():
    obs = "P _\n_ G"
    assert turn_message(obs, 1, 10, 2) == "Turn 1:\nP _\n_ G\nYou have 10 actions left; give at most 2 this turn."
    # fewer actions left than the per-turn limit: the message says so
    assert turn_message(obs, 5, 1, 2).endswith("You have 1 actions left; give at most 1 this turn.")


@pytest.mark.parametrize("turn,left,per_turn", [(0, 3, 2), (1, -1, 2), (1, 3, 0)])
def test_turn_message_rejects_bad_numbers(turn, left, per_turn):
    with pytest.raises(ValueError):
        turn_message("x", turn, left, per_turn)
