"""Sudoku 4x4: actions, rewards, board text, generator uniqueness, determinism and the expert."""

import dataclasses

import numpy as np
import pytest

import agentbench_af
from agentbench_af.api.checker import expert_episode
from agentbench_af.environments.sudoku.expert import expert_moves
from agentbench_af.environments.sudoku.generator import generate_puzzle
from agentbench_af.environments.sudoku.grid import BOXES, CELLS, COLS, PEERS, ROWS
from agentbench_af.environments.sudoku.solver import all_full_grids, count_solutions, solve
from agentbench_af.environments.sudoku.text import parse_placement, render_board, render_keyed, render_plain
from agentbench_af.environments.sudoku.variants import VARIANTS, SudokuVariant

IDS = tuple(VARIANTS)
DEFAULT = "Sudoku-4x4-10clues-v0"


def ans(*actions: str) -> str:
    return "<think>x</think><answer>" + " || ".join(actions) + "</answer>"


def rc(i: int) -> tuple[int, int]:
    return i // 4 + 1, i % 4 + 1


def fresh(seed: int = 0, env_id: str = DEFAULT):
    env = agentbench_af.make(env_id)
    env.reset(seed=seed)
    return env


def empty_cells(env) -> list[int]:
    return [i for i in range(CELLS) if not env.board[i]]


def wrong_digit(env, conflicting: bool) -> tuple[int, int, int]:
    """(seed, cell, digit): a wrong digit for an empty cell that does / does not repeat a peer's digit."""
    for seed in range(50):
        env.reset(seed=seed)
        for i in empty_cells(env):
            for d in range(1, 5):
                clash = any(env.board[j] == d for j in PEERS[i])
                if d != env.solution[i] and clash == conflicting:
                    return seed, i, d
    raise AssertionError("no such cell in 50 seeds")


def is_valid_full_grid(g) -> bool:
    return all(sorted(g[j] for j in unit) == [1, 2, 3, 4] for unit in ROWS + COLS + BOXES)


# ---------------------------------------------------------------- actions and rewards
@pytest.mark.parametrize(
    "form",
    [
        "{r},{c},{n}",
        " {r} , {c} ,{n}",
        "({r},{c},{n})",
        "place {n} at row {r} col {c}",
        "PLACE {n} AT ROW {r} COLUMN {c}",
        "Place {n} at row {r}, col {c}",
    ],
)
def test_both_action_forms_place_the_digit(form):
    env = fresh()
    i = empty_cells(env)[0]
    r, c = rc(i)
    n = env.solution[i]
    _, reward, terminated, _, info = env.step(ans(form.format(r=r, c=c, n=n)))
    assert info["action_is_valid"] and info["action_is_effective"] and info["num_actions"] == 1
    assert env.board[i] == n and reward == 1.0 and not terminated


@pytest.mark.parametrize(
    "text",
    [
        "5,1,1",
        "0,1,1",
        "1,1,9",
        "1,1,0",
        "999999,1,1",
        "hello",
        "1,2",
        "1,2,3,4",
        "\uff11,1,1",
        "place 1 at col 2 row 1",
        "1;2;3",
    ],
)
def test_unreadable_or_out_of_range_is_invalid_and_changes_nothing(text):
    env = fresh()
    before = (env.render(), env.actions_left)
    _, reward, _, _, info = env.step(ans(text))
    assert not info["action_is_valid"] and info["invalid_reason"] and "\n" not in info["invalid_reason"]
    assert reward == pytest.approx(env.variant.format_penalty)
    assert (env.render(), env.actions_left) == before


def test_conflicting_placement_is_placed_marked_and_costs_a_tenth():
    env = agentbench_af.make(DEFAULT)
    seed, i, d = wrong_digit(env, conflicting=True)
    env.reset(seed=seed)
    obs, reward, _, _, info = env.step(ans("{},{},{}".format(*rc(i), d)))
    assert info["action_is_valid"] and info["action_is_effective"]
    assert reward == pytest.approx(-0.1)
    assert env.board[i] == d and f"*{d}*" in obs and f"*{d}*" in env.render()


def test_non_conflicting_wrong_digit_gives_zero():
    env = agentbench_af.make(DEFAULT)
    seed, i, d = wrong_digit(env, conflicting=False)
    env.reset(seed=seed)
    obs, reward, _, _, info = env.step(ans("{},{},{}".format(*rc(i), d)))
    assert info["action_is_valid"] and info["action_is_effective"] and reward == 0.0
    assert "*" not in obs and env.board[i] == d


def test_placing_on_a_given_cell_is_invalid_and_leaves_the_state():
    env = fresh()
    i = next(k for k in range(CELLS) if env.givens[k])
    before = (env.render(), env.board, env.actions_left)
    other = env.board[i] % 4 + 1
    for d in (other, env.board[i]):
        _, reward, _, _, info = env.step(ans("{},{},{}".format(*rc(i), d)))
        assert not info["action_is_valid"] and "given" in info["invalid_reason"]
        assert reward == pytest.approx(env.variant.format_penalty)
        assert (env.render(), env.board, env.actions_left) == before


def test_overwrite_fixes_a_mistake_and_correct_reward_is_paid_once_per_cell():
    env = agentbench_af.make(DEFAULT)
    seed, i, d = wrong_digit(env, conflicting=True)
    env.reset(seed=seed)
    r, c = rc(i)
    n = env.solution[i]
    assert env.step(ans(f"{r},{c},{d}"))[1] == pytest.approx(-0.1)
    obs, reward, _, _, info = env.step(ans(f"{r},{c},{n}"))  # overwrite the mistake
    assert reward == 1.0 and env.board[i] == n and info["action_is_effective"] and "*" not in obs
    _, reward, _, _, info = env.step(ans(f"{r},{c},{n}"))  # the same digit again: valid, no change
    assert info["action_is_valid"] and not info["action_is_effective"] and reward == 0.0
    assert env.step(ans(f"{r},{c},{d}", f"{r},{c},{n}"))[1] == pytest.approx(-0.1)  # no second +1


def test_completing_the_grid_pays_the_bonus_and_terminates():
    env = fresh(seed=5)
    todo = empty_cells(env)
    actions = ["{},{},{}".format(*rc(i), env.solution[i]) for i in todo]
    total, terminated, info = 0.0, False, {}
    for k in range(0, len(actions), 2):
        assert not terminated
        _, reward, terminated, truncated, info = env.step(ans(*actions[k : k + 2]))
        total += reward
    assert terminated and info["success"] and env.board == env.solution
    assert total == pytest.approx(len(todo) + 10.0)


# ---------------------------------------------------------------- board text and parsing
def test_render_shows_indices_givens_placed_conflicts_and_empty():
    board = [1, 0, 3, 2] + [1, 4, 0, 0] + [0, 0, 0, 0] + [0, 0, 0, 1]  # the 1 at row 2 col 1 repeats row 1's
    given = [True, False, True, False] + [False] * 11 + [True]
    assert render_board(board, given) == (
        "   1   2     3   4\n"
        "1 [1]  .  | [3]  2\n"
        "2 *1*  4  |  .   .\n"
        "  --------+--------\n"
        "3  .   .  |  .   .\n"
        "4  .   .  |  .  [1]"
    )


def test_plain_board_gives_every_cell_one_character_at_a_fixed_place():
    board = [1, 0, 3, 2] + [1, 4, 0, 0] + [0, 0, 0, 0] + [0, 0, 0, 1]
    assert render_plain(board) == (
        "  1 2   3 4\n"
        "1 1 . | 3 2\n"
        "2 1 4 | . .\n"
        "  ----+----\n"
        "3 . . | . .\n"
        "4 . . | . 1"
    )
    env = agentbench_af.make("Sudoku-4x4-10clues-v0", board="plain")
    obs, _ = env.reset(seed=3)
    assert "[" not in obs and "Symbols: N is a digit" in env.rules(env.variant)
    with pytest.raises(ValueError, match="board must be one of"):
        agentbench_af.make("Sudoku-4x4-10clues-v0", board="boxed")


def test_parse_placement_forms():
    assert parse_placement("2,3,4") == parse_placement("place 4 at row 2 col 3") == (2, 3, 4)
    assert parse_placement("place4atrow2col3") == (2, 3, 4)
    assert parse_placement("(2,3,4") is None and parse_placement("2,3,4,") is None


# ---------------------------------------------------------------- solver and generator
def test_all_full_grids_are_the_288_valid_grids():
    grids = all_full_grids()
    assert len(grids) == len(set(grids)) == 288 and all(is_valid_full_grid(g) for g in grids)


def test_solver_counts_up_to_the_limit():
    assert count_solutions([0] * CELLS, 2) == 2
    assert count_solutions([1, 1] + [0] * 14, 2) == 0
    assert solve(all_full_grids()[7]) == all_full_grids()[7]


@pytest.mark.parametrize("env_id", IDS)
def test_generated_puzzles_are_unique_with_the_clue_count(env_id):
    clues = agentbench_af.spec(env_id).variant.clues
    for seed in (*range(100), *range(1_000_000, 1_000_050)):
        p = generate_puzzle(clues, seed)
        assert sum(1 for d in p.givens if d) == clues
        assert all(g in (0, s) for g, s in zip(p.givens, p.solution, strict=True))
        assert is_valid_full_grid(p.solution)
        assert count_solutions(p.givens, 3) == 1 and solve(p.givens) == p.solution


@pytest.mark.parametrize("env_id", IDS)
def test_a_seed_determines_the_puzzle(env_id):
    clues = agentbench_af.spec(env_id).variant.clues
    puzzles = [generate_puzzle(clues, s) for s in range(30)]
    assert puzzles == [generate_puzzle(clues, s) for s in range(30)]
    assert len(set(puzzles)) >= 25
    env = agentbench_af.make(env_id)
    first = env.reset(seed=11)
    env.reset(seed=12)
    assert env.reset(seed=11) == first


def test_variant_limits_and_validation():
    v = SudokuVariant()
    assert (v.clues, v.max_turns, v.max_actions_per_turn, v.max_actions_per_episode) == (10, 8, 2, 16)
    with pytest.raises(ValueError):
        SudokuVariant(clues=3)
    with pytest.raises(ValueError):
        dataclasses.replace(v, clues=6, max_actions_per_episode=8)


# ---------------------------------------------------------------- expert
@pytest.mark.parametrize("env_id", IDS)
def test_expert_always_solves(env_id):
    env = agentbench_af.make(env_id)
    lo = env.variant.eval_seeds[0]
    empty = CELLS - env.variant.clues
    for seed in (*range(25), *range(lo, lo + 25)):
        success, total, turns, played = expert_episode(env, seed)
        assert success and total == pytest.approx(empty + 10.0) and turns == (empty + 1) // 2
        assert all(t.reasoning and 1 <= len(t.actions) <= 2 for t in played)


def test_expert_fixes_wrong_digits_first():
    env = agentbench_af.make(DEFAULT)
    seed, i, d = wrong_digit(env, conflicting=True)
    env.reset(seed=seed)
    env.step(ans("{},{},{}".format(*rc(i), d)))
    turn = env.expert_turn()
    assert turn.actions[0] == "{},{},{}".format(*rc(i), env.solution[i]) and "wrong" in turn.reasoning
    while not env.is_success:
        env.step(ans(*env.expert_turn().actions))
    assert env.board == env.solution


def test_expert_reasons_naked_then_hidden_single_then_the_solution():
    solution = (1, 2, 3, 4, 3, 4, 1, 2, 2, 1, 4, 3, 4, 3, 2, 1)
    board = [0] * CELLS
    board[7], board[10] = 2, 4  # no naked single anywhere; 4 fits only at row 1 col 4 within column 4
    assert expert_moves(board, solution, 1) == [(3, 4, "In column 4, 4 fits only at row 1 col 4.")]
    ((i, n, reason),) = expert_moves([0] * CELLS, solution, 1)  # nothing forced: fall back to the solution
    assert (i, n) == (0, 1) and reason == "The unique solution has 1 at row 1 col 1."
    almost = list(solution)
    almost[5] = 0
    assert expert_moves(almost, solution, 2) == [
        (5, 4, "Only 4 fits at row 2 col 2: its row, column and box hold the other digits.")
    ]


def test_scan_sentences_list_the_units_digits_by_hand():
    # seed 600 of the 10-clue variant:   [2] [1] | [4] [3]
    #                                     .   .  | [1]  .
    #                                     .   .  | [3] [4]
    #                                    [4]  .  | [2] [1]
    env = agentbench_af.make("Sudoku-4x4-10clues-v0", expert_reasoning="scan")
    env.reset(seed=600)
    turn = env.expert_turn()
    # row 2 col 1: row 2 holds 1; column 1 holds 2, 4; box 1 holds 2, 1 -> 3 is left.
    # row 2 col 2 then counts that 3: row 3 1, column 2 holds 1, box 2 1 3 -> 4.
    assert turn.reasoning == ("row 2 col 1: row 1, col 2 4, box 2 1, so 3. "
                              "row 2 col 2: row 3 1, col 1, box 2 1 3, so 4.")
    assert turn.actions == ("2,1,3", "2,2,4")
    success, *_ = expert_episode(env, 600)
    assert success
    with pytest.raises(ValueError, match="expert_reasoning must be one of"):
        agentbench_af.make("Sudoku-4x4-10clues-v0", expert_reasoning="plan")


def test_units_reasoning_fills_full_houses_first_by_hand():
    # the same seed 600: row 4 ([4] . [2] [1]) is the first unit with one empty cell -> 3 at col 2;
    # then no row has one empty cell, and column 4 (3 . 4 1, top to bottom) leaves 2 at row 2.
    env = agentbench_af.make("Sudoku-4x4-10clues-v0", expert_reasoning="units")
    env.reset(seed=600)
    turn = env.expert_turn()
    assert turn.reasoning == "row 4 has 4 . 2 1: 3 goes at col 2. col 4 has 3 . 4 1: 2 goes at row 2."
    assert turn.actions == ("4,2,3", "2,4,2")
    # a box: only box 1 (cells 0, 1, 4, 5) has one empty cell; rows and columns have two or more
    solution = generate_puzzle(10, 600).solution
    board = [0] * CELLS
    for i in (0, 1, 4):
        board[i] = solution[i]
    assert expert_moves(board, solution, 1, "units") == [(5, 4, "box 1 has 2 1 3 .: 4 goes at row 2 col 2.")]
    assert all(expert_episode(env, seed)[0] for seed in range(50))


def test_keyed_board_and_units_sentences_by_hand():
    # seed 600 of the 10-clue variant:   [2] [1] | [4] [3]
    #                                     .   .  | [1]  .
    #                                     .   .  | [3] [4]
    #                                    [4]  .  | [2] [1]
    env = agentbench_af.make("Sudoku-4x4-10clues-v0", expert_reasoning="units", board="keyed")
    obs, _ = env.reset(seed=600)
    assert obs.startswith(
        "  1  2    3  4\n"
        "1 a2 b1 | c4 d3\n"
        "2 e. f. | g1 h.\n"
        "  ------+------\n"
        "3 i. j. | k3 l4\n"
        "4 m4 n. | o2 p1"
    )
    assert render_keyed([0] * CELLS).splitlines()[1] == "1 a. b. | c. d."
    assert "letter (a to p in reading order)" in env.rules(env.variant)
    # row 4 is the first full house, then column 4; each sentence lists the board as shown
    turn = env.expert_turn()
    assert turn.reasoning == ("row 4 has m4 n. o2 p1 so 3 goes at col 2. "
                              "col 4 has d3 h. l4 p1 so 2 goes at row 2.")
    assert turn.actions == ("4,2,3", "2,4,2")
    # only box 1 has one empty cell: the keyed expert stops after it (what comes next would rest on a
    # digit the board does not show yet); the plain `units` expert goes on with a single
    solution = generate_puzzle(10, 600).solution
    board = [0] * CELLS
    for i in (0, 1, 4):
        board[i] = solution[i]
    assert expert_moves(board, solution, 2, "units", keyed=True) == [
        (5, 4, "box 1 has a2 b1 e3 f. so 4 goes at row 2 col 2.")
    ]
    assert len(expert_moves(board, solution, 2, "units")) == 2
    # a unit whose empty cell this turn already filled is passed over (the board still shows it empty)
    for seed in range(50):
        success, _, _, played = expert_episode(env, seed)
        assert success and all(len({a[:3] for a in t.actions}) == len(t.actions) for t in played)


def test_unit_scan_reads_each_unit_before_choosing_by_hand():
    # seed 600 (keyed): row 1 a2 b1 c4 d3 / row 2 e. f. g1 h. / row 3 i. j. k3 l4 / row 4 m4 n. o2 p1
    env = agentbench_af.make("Sudoku-4x4-10clues-v0", expert_reasoning="unit-scan", board="keyed")
    env.reset(seed=600)
    turn = env.expert_turn()
    assert turn.reasoning == (
        "row 1 has a2 b1 c4 d3 so 0 empty. row 2 has e. f. g1 h. so 3 empty. row 3 has i. j. k3 l4 so 2 empty. "
        "row 4 has m4 n. o2 p1 so 1 empty and 3 goes at col 2. "
        "col 1 has a2 e. i. m4 so 2 empty. col 2 has b1 f. j. n. so 3 empty. col 3 has c4 g1 k3 o2 so 0 empty. "
        "col 4 has d3 h. l4 p1 so 1 empty and 2 goes at row 2.")
    assert turn.actions == ("4,2,3", "2,4,2")  # the `units` expert's two placements
    solution = generate_puzzle(10, 600).solution
    # a unit whose one empty cell this turn already took is read and passed over; a scan that runs out after
    # one placement keeps what it read: board = the solution with f and j empty (col 2 and box 3 each hold one
    # of them), so col 2 (f, j) is skipped, box 1 takes f, box 3's j is the second placement
    board = list(solution)
    board[5] = board[9] = 0
    moves = expert_moves(board, solution, 2, "unit-scan", keyed=True)
    assert [(i, n) for i, n, _ in moves] == [(5, solution[5]), (9, solution[9])]
    assert moves[0][2].startswith("row 1 has a2 b1 c4 d3 so 0 empty. row 2 has e3 f. g1 h2 so 1 empty and")
    assert moves[1][2].startswith("row 3 has ")  # read on from the unit after the first choice
    board[9] = solution[9]  # now only f is empty: row 2 takes it, col 2 and box 1 read it as taken
    (only,) = expert_moves(board, solution, 2, "unit-scan", keyed=True)
    assert only[2].endswith(f"col 2 has b1 f. j{solution[9]} n{solution[13]} so 1 empty, taken. "
                            "col 3 has c4 g1 k3 o2 so 0 empty. col 4 has d3 h2 l4 p1 so 0 empty. "
                            "box 1 has a2 b1 e3 f. so 1 empty, taken. box 2 has c4 d3 g1 h2 so 0 empty. "
                            f"box 3 has i{solution[8]} j{solution[9]} m4 n{solution[13]} so 0 empty. "
                            "box 4 has k3 l4 o2 p1 so 0 empty.")
    # no unit with one empty cell: the `singles` sentence, as the `units` expert gives
    empty = [0] * CELLS
    assert expert_moves(empty, solution, 2, "unit-scan", keyed=True) == expert_moves(empty, solution, 2, "units",
                                                                                      keyed=True)
    assert all(expert_episode(env, seed)[0] for seed in range(50))
    with pytest.raises(ValueError, match="board='keyed'"):
        agentbench_af.make("Sudoku-4x4-10clues-v0", expert_reasoning="unit-scan")


def test_keyed_cells_split_into_letter_and_digit_tokens():
    from agentbench_af.models import tokenizer_for_envs

    overrides = {DEFAULT: {"expert_reasoning": "units", "board": "keyed"}}
    tok = tokenizer_for_envs([DEFAULT], episodes_per_env=50, env_kwargs=overrides)
    pieces = tok.convert_ids_to_tokens(tok.encode("1 a2 b. | c4 d3", add_special_tokens=False))
    assert pieces == ["1", "Ġa", "2", "Ġb", ".", "Ġ|", "Ġc", "4", "Ġd", "3"]  # Ġ: a leading space
    said = tok.convert_ids_to_tokens(tok.encode(" has a2 b. so", add_special_tokens=False))
    assert said[1:5] == ["Ġa", "2", "Ġb", "."]  # the sentence spells a cell with the board's tokens


def test_noisy_expert_writes_drawn_digits_under_the_right_sentence_by_hand():
    """expert_action_noise=p: each placement's digit is, with probability p, 1 + a draw in 0..3 from the stream
    default_rng([seed, turn, 0xAC7]) (first n uniforms decide, then n integers); the sentence is unchanged, and
    the turn after a wrong digit fixes it first."""
    clean = agentbench_af.make(DEFAULT)
    noisy = agentbench_af.make(DEFAULT, expert_action_noise=1.0)
    for env in (clean, noisy):
        env.reset(seed=3)
    right, drawn_turn = clean.expert_turn(), noisy.expert_turn()
    rng = np.random.default_rng([3, 0, 0xAC7])
    replace = rng.random(len(right.actions)) < 1.0
    drawn = rng.integers(0, 4, size=len(right.actions))
    assert replace.all()
    expected = tuple(a.rsplit(",", 1)[0] + f",{int(d) + 1}" for a, d in zip(right.actions, drawn, strict=True))
    assert drawn_turn.actions == expected and drawn_turn.reasoning == right.reasoning
    quiet = agentbench_af.make(DEFAULT, expert_action_noise=0.0)
    quiet.reset(seed=3)
    assert quiet.expert_turn() == right

    # play a noisy turn whose digit is wrong, then the noiseless expert's next turn starts with the fix
    half = agentbench_af.make(DEFAULT, expert_action_noise=1.0)
    half.reset(seed=3)
    half.step(ans(*drawn_turn.actions))
    wrong = [a for a, b in zip(drawn_turn.actions, right.actions, strict=True) if a != b]
    assert wrong  # seed 3's first draws put at least one wrong digit
    half.variant = dataclasses.replace(half.variant, expert_action_noise=0.0)
    r, c, n = wrong[0].split(",")
    assert half.expert_turn().reasoning.startswith(f"The {n} at row {r} col {c} is wrong; it must be ")
    with pytest.raises(ValueError):
        SudokuVariant(expert_action_noise=1.5)
