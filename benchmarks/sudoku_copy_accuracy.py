"""Does a Sudoku policy copy the keyed board? Per turn of its own play, and under teacher forcing.

For a run trained on `Sudoku-*` with `board=keyed` and the `units` expert, whose reasoning lists a unit's cells
as the board spells them (`row 2 has e3 f. g1 h4 so 2 goes at col 2.`), prints
- **its own play** (`--episodes` puzzles at `--temperature`, 0 = greedy), per turn of the episode: the share of
  valid turns, and of the cells its reasoning names (`f.`, `g1`), the share whose digit (or `.`) is the one the
  board it saw shows after that letter; and on the first turn, the units its reasoning lists (`row 2 has ...`)
  by how many empty cells that unit has on the board, with how many of them it copied right (the expert lists
  only units with one empty cell);
- **teacher forcing** on expert demonstrations of evaluation puzzles: per kind of response token (a digit or `.`
  copied right after a cell's letter, the answer, the rest), the mean negative log-likelihood and the share of
  positions where the policy's most likely token is not the expert's.

A policy that copies under teacher forcing but not in its own play compounds its own errors; one that does
not copy under teacher forcing has not learned the copy (docs/why-rl-loses-ground.md, Sudoku).

    python benchmarks/sudoku_copy_accuracy.py RUN --episodes 64 --demos 128
    python benchmarks/sudoku_copy_accuracy.py RUN --policy warm_start --temperature 1
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

import torch

from agentbench_af.environments.sudoku.grid import BOXES, COLS, ROWS
from agentbench_af.environments.sudoku.text import CELL_KEYS

BOARD_LINE = re.compile(r"^\d\s")
KEYED_CELL = re.compile(r"(?<![A-Za-z])([a-p])([1-4.])(?![A-Za-z0-9])")
CELL_LETTER_PIECE = re.compile(r"^ [a-p]$")
UNIT_SENTENCE = re.compile(r"\b(row|col|box) ([1-4]) has ((?:[a-p][1-4.] ?)+)")
UNIT_CELLS = {(kind, number): "".join(CELL_KEYS[i] for i in cells)  # ("row", 2): "efgh", as the expert names them
              for kind, units in (("row", ROWS), ("col", COLS), ("box", BOXES))
              for number, cells in enumerate(units, start=1)}
COPIED_PIECES = frozenset("1234.")


def keyed_board(observation: str) -> dict[str, str]:
    """The keyed board's cells in an observation, `{"a": "3", "c": "."}`, read from its board lines only."""
    cells: dict[str, str] = {}
    for line in observation.splitlines():
        if BOARD_LINE.match(line):
            cells.update(KEYED_CELL.findall(line))
    return cells


def named_cells(response: str) -> list[tuple[str, str]]:
    """The cells the reasoning (the text before `</think>`) names, in order: `[("e", "3"), ("f", ".")]`."""
    return KEYED_CELL.findall(response.split("</think>")[0])


def copy_counts(board: dict[str, str], response: str) -> tuple[int, int]:
    """(named cells whose digit matches the board, named cells the board has)."""
    named = [(letter, digit) for letter, digit in named_cells(response) if letter in board]
    return sum(board[letter] == digit for letter, digit in named), len(named)


def listed_units(board: dict[str, str], response: str) -> list[tuple[int | None, bool]]:
    """Per unit the reasoning lists (`row 2 has e3 f. g1 h4`): (empty cells of that unit on the board, every
    listed cell copied right); empty cells are None where the listed letters are not the unit's."""
    units = []
    for kind, number, listed in UNIT_SENTENCE.findall(response.split("</think>")[0]):
        cells = [(cell[0], cell[1]) for cell in listed.split()]
        letters = "".join(letter for letter, _ in cells)
        empties = sum(board.get(letter) == "." for letter in letters) if letters == UNIT_CELLS[(kind, int(number))] \
            else None
        units.append((empties, all(board.get(letter) == digit for letter, digit in cells)))
    return units


def first_turn_units(trajs: Iterable) -> dict[int | None, list[int]]:
    """Over the episodes' first turns: per empty-cell count of a listed unit, [units, copied right]."""
    rows: dict[int | None, list[int]] = defaultdict(lambda: [0, 0])
    for traj in trajs:
        if traj.turns:
            first = traj.turns[0]
            for empties, right in listed_units(keyed_board(first.user_message), first.response_text):
                rows[empties][0] += 1
                rows[empties][1] += right
    return dict(sorted(rows.items(), key=lambda item: -1 if item[0] is None else item[0]))


def token_kind(previous_piece: str, piece: str, response_so_far: str) -> str:
    """`answer` inside the answer, `copy` for a digit or `.` right after a cell's letter (` f`), else `other`."""
    if "<answer>" in response_so_far:
        return "answer"
    if CELL_LETTER_PIECE.match(previous_piece) and piece in COPIED_PIECES:
        return "copy"
    return "other"


def play_by_turn(trajs: Iterable) -> dict[int, list[int]]:
    """Per turn index (from 1): [valid turns, turns, named cells copied right, named cells]."""
    rows: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for traj in trajs:
        for index, turn in enumerate(traj.turns, start=1):
            right, named = copy_counts(keyed_board(turn.user_message), turn.response_text)
            row = rows[index]
            row[0] += turn.valid
            row[1] += 1
            row[2] += right
            row[3] += named
    return dict(sorted(rows.items()))


def teacher_forced(lm: torch.nn.Module, pieces_of: Sequence[Sequence[str]], data) -> dict[str, list[float]]:
    """Per token kind: [summed NLL, tokens, argmax misses] over the generated tokens of `data` (a RolloutBatch
    of demonstrations; `pieces_of[b]` are row b's decoded tokens)."""
    out: dict[str, list[float]] = defaultdict(lambda: [0.0, 0, 0])
    with torch.no_grad():
        for start in range(0, data.batch_size, 32):
            rows = torch.arange(start, min(start + 32, data.batch_size))
            mb = data.select(rows).crop()
            logp = lm(input_ids=mb.input_ids, attention_mask=mb.attention_mask).logits.float().log_softmax(-1)
            for b in range(mb.input_ids.shape[0]):
                ids, mask = mb.input_ids[b].tolist(), mb.response_mask[b].tolist()
                pieces = pieces_of[int(rows[b])][: len(ids)]
                response = ""
                for t in range(1, len(ids)):
                    if not mask[t]:
                        continue
                    kind = token_kind(pieces[t - 1], pieces[t], response)
                    row = out[kind]
                    row[0] -= float(logp[b, t - 1, ids[t]])
                    row[1] += 1
                    row[2] += int(int(logp[b, t - 1].argmax()) != ids[t])
                    response += pieces[t]
    return dict(sorted(out.items()))


def main() -> None:
    from agentbench_af.evaluate.evaluate import eval_seeds, evaluate_policy
    from agentbench_af.rollout.to_batch import trajectories_to_batch
    from agentbench_af.train.bookkeeping import saved_run
    from agentbench_af.train.config import demonstration_overrides
    from agentbench_af.train.warm.demos import demonstration_trajectories

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", type=Path, help="a run directory of a keyed-board Sudoku run")
    parser.add_argument("--policy", choices=("final_policy", "warm_start"), default="final_policy")
    parser.add_argument("--episodes", type=int, default=64, help="puzzles played (the first evaluation seeds)")
    parser.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    parser.add_argument("--demos", type=int, default=128, help="expert demonstrations of evaluation puzzles")
    args = parser.parse_args()

    try:
        cfg = saved_run.run_config(args.run)
    except ValueError as exc:  # no such folder, or no config.yaml in it
        parser.error(str(exc))
    if not cfg.env.id.startswith("Sudoku") or cfg.env.overrides.get("board") != "keyed":
        raise SystemExit(f"{args.run}: needs a Sudoku run with env.overrides.board=keyed, got {cfg.env.id} "
                         f"{cfg.env.overrides}")
    policy, engine = saved_run.load_for_play(args.run, cfg, args.policy)
    result, trajs = evaluate_policy(engine, policy.tokenizer, policy.chat, cfg.env.id, args.episodes,
                                    args.temperature, cfg.rollout, cfg.env.overrides)
    print(f"{cfg.env.id} {args.policy} at T = {args.temperature:g}: success {result.success:.3f}, "
          f"valid {result.valid_rate:.3f} over {result.episodes} puzzles")
    print("| turn | valid turns | named cells copied right |\n|---|---|---|")
    for index, (valid, turns, right, named) in play_by_turn(trajs).items():
        print(f"| {index} | {valid} / {turns} ({valid / turns:.0%}) | {right} / {named} "
              f"({right / max(named, 1):.1%}) |")

    print("\n| first turn: empty cells of a listed unit on the board | units | copied right |\n|---|---|---|")
    for empties, (units, right) in first_turn_units(trajs).items():
        label = "not the unit's letters" if empties is None else str(empties)
        print(f"| {label} | {units} | {right} ({right / units:.0%}) |")

    seeds = eval_seeds(cfg.env.id, args.demos, cfg.env.overrides)
    demos = demonstration_trajectories(cfg.env.id, seeds, policy.tokenizer, policy.chat, cfg.rollout,
                                       demonstration_overrides(cfg))
    pad = policy.pad_token_id
    data = trajectories_to_batch(demos, cfg.rollout.context_mode, pad)
    pieces_of = [[policy.tokenizer.decode([i]) for i in row] for row in data.input_ids.tolist()]
    print(f"\nteacher forcing on {len(demos)} expert demonstrations of evaluation puzzles ({data.batch_size} turns)")
    print("| response tokens | tokens | NLL per token | argmax not the expert's |\n|---|---|---|---|")
    for kind, (nll, count, missed) in teacher_forced(policy.lm, pieces_of, data).items():
        print(f"| {kind} | {int(count)} | {nll / count:.4f} | {missed / count:.2%} |")


if __name__ == "__main__":
    main()
