"""`evaluate.invalid_turns`: invalid reasons counted with digits folded, and responses cut at the limit (by hand)."""

from agentbench_af.evaluate.invalid_turns import invalid_breakdown, reason_key
from agentbench_af.rollout.types import Trajectory, TurnRecord


def _turn(n_tokens: int, valid: bool = True, reason: str = "") -> TurnRecord:
    return TurnRecord("", [], list(range(n_tokens)), [], [], [], "", valid=valid, invalid_reason=reason)


def test_reasons_fold_digits_and_cut_responses_are_counted():
    trajs = [
        Trajectory("e", 0, 0, "", [_turn(4, False, "row 1 col 2 holds the given 3"), _turn(2)]),
        Trajectory("e", 1, 0, "", [_turn(4, False, "no <answer>...</answer> found"),
                                   _turn(3, False, "row 4 col 1 holds the given 12"), _turn(4)]),
        Trajectory("e", 2, 0, "", [_turn(1, False, "")]),
    ]
    b = invalid_breakdown(trajs, max_new_tokens=4)
    # 6 turns, 4 invalid; at the 4-token limit: turns 1, 3 and 5 (the last valid), 2 of them invalid
    assert (b.turns, b.invalid, b.at_limit, b.invalid_at_limit) == (6, 4, 3, 2)
    assert b.by_reason == {"row # col # holds the given #": 2, "no <answer>...</answer> found": 1,
                           "(no reason given)": 1}
    assert list(b.by_reason)[0] == "row # col # holds the given #"  # most frequent first
    assert reason_key("  got 10,2,33 ") == "got #,#,#"
    assert invalid_breakdown([], 4).to_dict() == {"turns": 0, "invalid": 0, "at_limit": 0, "invalid_at_limit": 0,
                                                  "by_reason": {}}
