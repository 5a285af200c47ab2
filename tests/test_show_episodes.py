"""benchmarks/show_episodes.py: an episode printed turn by turn, worked by hand."""

from __future__ import annotations

import bench_scripts  # noqa: F401  (puts benchmarks/ on sys.path)
from show_episodes import format_episode

from agentbench_af.rollout.types import Trajectory, TurnRecord


def turn(page: str, response: str) -> TurnRecord:
    return TurnRecord(page, context_ids=[], response_ids=[], logprobs=[], entropies=[], roles=[], response_text=response)


def episode(success: bool, turns: list[TurnRecord]) -> Trajectory:
    return Trajectory("WebShop-mini-v0", seed=7, group=0, system_prompt="", turns=turns, success=success)


TURNS = [turn("Turn 1:\nPage: search", "<answer>search[socks]</answer>"),
         turn("Turn 2:\nPage: results", "<answer>click[B0708]</answer>")]


def test_each_turn_shows_its_observation_and_response_in_order():
    assert format_episode(episode(False, TURNS), 0).split("\n") == [
        "===== seed 7: failure, 2 turns",
        "--- turn 1, observation:", "Turn 1:", "Page: search",
        "--- turn 1, response:", "<answer>search[socks]</answer>",
        "--- turn 2, observation:", "Turn 2:", "Page: results",
        "--- turn 2, response:", "<answer>click[B0708]</answer>"]


def test_page_chars_keeps_the_end_of_each_observation():
    text = format_episode(episode(True, TURNS[:1]), 6).split("\n")
    assert text[0] == "===== seed 7: success, 1 turns"
    assert text[2] == "search"
