"""`benchmarks/sudoku_copy_accuracy.py`: the keyed board and the cells a response names are read as written, and
teacher forcing sorts every generated token of expert demonstrations into one kind (hand-worked examples)."""

from __future__ import annotations

from types import SimpleNamespace

import bench_scripts  # noqa: F401  (first: it puts benchmarks/ on sys.path)
import sudoku_copy_accuracy as sca

import agentbench_af
from agentbench_af.models.policy import build_policy
from agentbench_af.rollout.to_batch import trajectories_to_batch
from agentbench_af.rollout.types import RolloutConfig
from agentbench_af.train.warm.demos import demonstration_trajectories

ENV = "Sudoku-4x4-10clues-v0"
KEYED = {"board": "keyed", "expert_reasoning": "units"}
# seed 900's first observation (keyed board)
BOARD = "  1  2    3  4\n1 a3 b2 | c. d4\n2 e1 f. | g. h.\n  ------+------\n3 i4 j1 | k2 l.\n4 m2 n. | o4 p1"


def test_the_keyed_board_is_read_from_its_board_lines_only():
    text = "Invalid: row 1 col 1 holds the given 3, which cannot change\n" + BOARD + "\nYou have 14 actions left."
    board = sca.keyed_board(text)
    assert len(board) == 16
    assert (board["a"], board["c"], board["f"], board["l"], board["p"]) == ("3", ".", ".", ".", "1")


def test_the_environment_writes_the_board_the_reader_expects():
    env = agentbench_af.make(ENV, **KEYED)
    obs, _ = env.reset(seed=900)
    assert sca.keyed_board(obs) == sca.keyed_board(BOARD)


def test_named_cells_are_those_of_the_reasoning_and_copies_are_counted_against_the_board():
    response = ("<think>row 2 has e1 f. g3 h. so 4 goes at col 2. col 2 has b2 f. j1 n4 so 3.</think>"
                "<answer>2,2,4 || a1</answer>")
    named = sca.named_cells(response)
    assert named == [("e", "1"), ("f", "."), ("g", "3"), ("h", "."), ("b", "2"), ("f", "."), ("j", "1"), ("n", "4")]
    # wrong: g3 (board g.) and n4 (board n.); the answer's a1 is not reasoning
    assert sca.copy_counts(sca.keyed_board(BOARD), response) == (6, 8)


def test_listed_units_are_classed_by_their_empty_cells_on_the_board():
    board = sca.keyed_board(BOARD)  # row 1: a3 b2 c. d4 (one empty), row 2: e1 f. g. h. (three), col 1: a3 e1 i4 m2
    response = ("<think>row 1 has a3 b2 c. d4 so 1 goes at col 3. row 2 has e1 f4 g. h3 so 2 goes at col 3. "
                "col 1 has a3 e1 i. m2 so 4. box 1 has a3 b2 c. d4 so 1.</think><answer>1,3,1</answer>")
    assert sca.listed_units(board, response) == [(1, True), (3, False), (0, False), (None, True)]
    trajs = [SimpleNamespace(turns=[SimpleNamespace(user_message=BOARD, response_text=response)]),
             SimpleNamespace(turns=[])]
    assert sca.first_turn_units(trajs) == {None: [1, 1], 0: [1, 0], 1: [1, 1], 3: [1, 0]}
    assert list(sca.first_turn_units(trajs)) == [None, 0, 1, 3]


def test_token_kinds():
    assert sca.token_kind(" f", ".", "<think>row 2 has e1") == "copy"
    assert sca.token_kind(" f", "3", "<think>row 2 has e1") == "copy"
    assert sca.token_kind(" f", "5", "<think>row 2 has e1") == "other"  # not a digit of the board
    assert sca.token_kind(" so", " 4", "<think>row 2 has e1 f.") == "other"
    assert sca.token_kind("row", " 2", "<think>") == "other"
    assert sca.token_kind(" f", "3", "<think>x</think><answer>") == "answer"


def test_play_by_turn_counts_each_turn_index():
    turn = SimpleNamespace
    trajs = [
        SimpleNamespace(turns=[turn(user_message=BOARD, response_text="<think>row 1 has a3 b2 c. d4</think>", valid=True),
                               turn(user_message=BOARD, response_text="<think>col 1 has a1</think>", valid=False)]),
        SimpleNamespace(turns=[turn(user_message=BOARD, response_text="<think>nothing</think>", valid=False)]),
    ]
    assert sca.play_by_turn(trajs) == {1: [1, 2, 4, 4], 2: [0, 1, 0, 1]}


def test_teacher_forcing_sorts_every_generated_token_and_counts_each_copied_cell():
    policy = build_policy("tiny-0.2m", [ENV], vocab_size=512, tokenizer_episodes=10, seed=0, env_kwargs={ENV: KEYED})
    rollout = RolloutConfig(max_new_tokens=96, context_mode="window", window_turns=1)
    demos = demonstration_trajectories(ENV, [1_000_000, 1_000_001], policy.tokenizer, policy.chat, rollout, KEYED)
    data = trajectories_to_batch(demos, "window", policy.pad_token_id)
    pieces_of = [[policy.tokenizer.decode([i]) for i in row] for row in data.input_ids.tolist()]
    kinds = sca.teacher_forced(policy.lm, pieces_of, data)
    assert sum(count for _, count, _ in kinds.values()) == int(data.response_mask.sum())
    named = sum(len(sca.named_cells(t.response_text)) for d in demos for t in d.turns)
    assert named > 0 and kinds["copy"][1] == named  # every cell the expert lists, and nothing else
    assert all(0 <= missed <= count and nll > 0 for nll, count, missed in kinds.values())
