"""FrozenLake over text, with gymnasium's FrozenLake as the dynamics and random maps per seed."""

from __future__ import annotations

from collections import deque

import numpy as np
from gymnasium.envs.toy_text.frozen_lake import FrozenLakeEnv as GymFrozenLake
from gymnasium.envs.toy_text.frozen_lake import generate_random_map

from agentbench_af.api import ActionOutcome, ExpertTurn, TextEnv, Variant
from agentbench_af.environments.frozenlake.variants import FrozenLakeVariant

ACTIONS = ("Left", "Down", "Right", "Up")  # gymnasium's action ids 0..3
_ACTION_IDS = {name.lower(): i for i, name in enumerate(ACTIONS)}
_MOVES = {0: (0, -1), 1: (1, 0), 2: (0, 1), 3: (-1, 0)}
MAX_DRAWS = 1000


def shortest_path(desc: list[str], start: tuple[int, int]) -> list[int] | None:
    """Breadth-first search from `start` to `G` over non-hole cells; action ids, or None."""
    n_rows, n_cols = len(desc), len(desc[0])
    prev: dict[tuple[int, int], tuple[tuple[int, int], int] | None] = {start: None}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        r, c = cell
        if desc[r][c] == "G":
            path: list[int] = []
            while prev[cell] is not None:
                cell, a = prev[cell]  # type: ignore[misc]
                path.append(a)
            return path[::-1]
        if desc[r][c] == "H":
            continue
        for a, (dr, dc) in _MOVES.items():
            nr, nc = min(max(r + dr, 0), n_rows - 1), min(max(c + dc, 0), n_cols - 1)
            if (nr, nc) not in prev and desc[nr][nc] != "H":
                prev[(nr, nc)] = (cell, a)
                queue.append((nr, nc))
    return None


def generate_map(variant: FrozenLakeVariant, seed: int) -> list[str]:
    """A map for `seed` whose shortest solution fits the action budget (redrawn until it does)."""
    for attempt in range(MAX_DRAWS):
        sub_seed = int(np.random.SeedSequence([seed, attempt]).generate_state(1)[0])
        desc = generate_random_map(size=variant.size, p=variant.frozen_prob, seed=sub_seed)
        if variant.random_start:
            rng = np.random.default_rng(sub_seed)
            grid = [list(row.replace("S", "F").replace("G", "F")) for row in desc]
            frozen = [(r, c) for r in range(variant.size) for c in range(variant.size) if grid[r][c] == "F"]
            i, j = rng.choice(len(frozen), size=2, replace=False)
            (sr, sc), (gr, gc) = frozen[i], frozen[j]
            grid[sr][sc], grid[gr][gc] = "S", "G"
            desc = ["".join(row) for row in grid]
        start = next((r, row.index("S")) for r, row in enumerate(desc) if "S" in row)
        path = shortest_path(desc, start)
        if path is not None and 0 < len(path) <= variant.max_actions_per_episode:
            return desc
    raise RuntimeError(f"no solvable FrozenLake map for seed {seed} in {MAX_DRAWS} draws")


class FrozenLakeEnv(TextEnv[FrozenLakeVariant]):
    description = "Reach the goal G on a frozen lake without falling into a hole O."
    action_help = "Left, Down, Right, Up"

    def __init__(self, variant: FrozenLakeVariant | None = None, render_mode: str | None = "ansi") -> None:
        super().__init__(variant or FrozenLakeVariant(), render_mode)
        self._gym: GymFrozenLake | None = None
        self._desc: list[str] = []
        self._pos = 0

    @classmethod
    def rules(cls, variant: Variant) -> str:
        slip = (
            " The ice is slippery: a move may go sideways instead of where you intended."
            if isinstance(variant, FrozenLakeVariant) and variant.slippery
            else ""
        )
        return (
            "You are solving the FrozenLake puzzle. Walk on the frozen lake from your position to the goal "
            "without falling into a hole." + slip + "\n"
            "Symbols: P is you, _ is frozen ice, O is a hole, G is the goal, X is you in a hole, "
            "√ is you on the goal.\n"
            "Actions: Left, Down, Right, Up."
        )

    def _new_game(self, seed: int) -> None:
        v = self.variant
        self._desc = generate_map(v, seed)
        self._gym = GymFrozenLake(
            desc=self._desc, is_slippery=v.slippery, success_rate=v.success_rate if v.slippery else 1.0
        )
        self._pos, _ = self._gym.reset(seed=seed)

    def _apply_action(self, action: str) -> ActionOutcome:
        a = _ACTION_IDS.get(action.strip().lower())
        if a is None:
            return ActionOutcome.invalid(f"unknown action {action[:40]!r}; use one of {', '.join(ACTIONS)}")
        assert self._gym is not None
        old = self._pos
        self._pos, reward, _, _, _ = self._gym.step(a)
        self._pos = int(self._pos)
        return ActionOutcome(valid=True, reward=float(reward), effective=self._pos != old)

    def _cell(self) -> tuple[int, int]:
        return divmod(self._pos, self.variant.size)

    def _letter(self) -> str:
        r, c = self._cell()
        return self._desc[r][c]

    @property
    def is_success(self) -> bool:
        return bool(self._desc) and self._letter() == "G"

    @property
    def is_failure(self) -> bool:
        return bool(self._desc) and self._letter() == "H"

    def _render_state(self) -> str:
        pr, pc = self._cell()
        symbols = {"F": "_", "S": "_", "H": "O", "G": "G"}
        rows = []
        for r, row in enumerate(self._desc):
            cells = []
            for c, ch in enumerate(row):
                if (r, c) == (pr, pc):
                    cells.append({"H": "X", "G": "√"}.get(ch, "P"))
                else:
                    cells.append(symbols[ch])
            rows.append(" ".join(cells))
        return "\n".join(rows)

    def expert_turn(self) -> ExpertTurn:
        r, c = self._cell()
        path = shortest_path(self._desc, (r, c)) or []
        moves = tuple(ACTIONS[a] for a in path[: self.variant.max_actions_per_turn])
        moves = self.variant.noisy_moves(moves, ACTIONS, self.seed_used, self.turn)
        gr, gc = next((i, row.index("G")) for i, row in enumerate(self._desc) if "G" in row)
        reasoning = self.variant.expert_sentence(
            f"I am at row {r + 1} col {c + 1} and the goal is at row {gr + 1} col {gc + 1}. "
            f"A safe path needs {len(path)} moves",
            f"go {' then '.join(moves) or 'nowhere'}",
        )
        return ExpertTurn(reasoning=reasoning, actions=moves)
