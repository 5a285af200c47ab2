"""ALFWorld over the TextEnv protocol: one admissible command per turn, reward 1 on winning.

Observation: the game's last feedback (at reset the room and the task sentence), the task sentence,
and the admissible commands. A command is matched case-insensitively (whitespace collapsed) against
the admissible commands; anything else is an invalid turn that never reaches the game. Expert: the
planner's next command from the current state. Left out: the hand-coded expert, partial rewards
(ALFWorld's score is 1 only on winning), and losing states (there are none).
"""

from __future__ import annotations

import numpy as np

from agentbench_af.api import ExpertTurn, Variant
from agentbench_af.api.command_env import CommandGameEnv
from agentbench_af.environments.alfworld.game import PddlGame
from agentbench_af.environments.alfworld.generator import get_game_file
from agentbench_af.environments.alfworld.official import official_game
from agentbench_af.environments.alfworld.variants import TASK_TYPES, ALFWorldVariant

_ALL_SALT = 0xA1F0


def task_for_seed(seed: int) -> str:
    """The task type (a key of TASK_TYPES) that ALFWorld-all draws for `seed`."""
    keys = list(TASK_TYPES)
    return keys[int(np.random.default_rng(np.random.SeedSequence([int(seed), _ALL_SALT])).integers(len(keys)))]


class ALFWorldEnv(CommandGameEnv[ALFWorldVariant]):
    description = "Household tasks in text (ALFWorld): find, clean, heat, cool, examine and place objects."
    action_help = (
        "go to X, open X, close X, take X from Y, move X to Y, heat X with Y, cool X with Y, clean X with Y, "
        "use X, examine X, look, inventory"
    )

    def __init__(self, variant: ALFWorldVariant | None = None, render_mode: str | None = "ansi") -> None:
        super().__init__(variant or ALFWorldVariant(), render_mode)
        self.task_key = ""

    @classmethod
    def rules(cls, variant: Variant) -> str:
        budget = variant.max_actions_per_episode
        return (
            "You are in a house (ALFWorld, a text game). The first observation states your task.\n"
            "Each turn, give exactly one command from the list of available actions (matched "
            "case-insensitively); any other text is an invalid turn and changes nothing.\n"
            "Commands: go to (receptacle), open (receptacle), close (receptacle), take (object) from "
            "(receptacle), move (object) to (receptacle), heat (object) with (microwave), cool (object) with "
            "(fridge), clean (object) with (sinkbasin), use (lamp), examine (something), look, inventory.\n"
            f"The reward is 1 when the task is done, else 0. You have at most {budget} commands."
        )

    # ----------------------------------------------------------------- the game
    def task_for(self, seed: int) -> str:
        return self.variant.task_type if self.variant.task_type != "all" else task_for_seed(seed)

    def _game_file(self, seed: int):
        """The task file for `seed` (and `task_key`, its task type, as a side effect)."""
        v = self.variant
        is_eval = v.eval_seeds[0] <= seed < v.eval_seeds[1]
        self.task_key = self.task_for(seed)
        if v.source == "generated":
            return get_game_file(self.task_key, seed, v.eval_scenes if is_eval else "seen")
        lo = v.eval_seeds[0] if is_eval else v.train_seeds[0]
        task_type = None if v.task_type == "all" else TASK_TYPES[self.task_key]
        return official_game(v.official_eval_split if is_eval else "train", task_type, seed - lo)

    def _make_game(self) -> PddlGame:
        return PddlGame()

    def _render_state(self) -> str:
        game = self._loaded()
        if game is None:
            return ""
        text = game.feedback
        if game.task and "Your task is to:" not in text:
            text += f"\nYour task is to: {game.task}."
        return text

    def expert_turn(self) -> ExpertTurn:
        game = self._loaded()
        if game is None:
            raise RuntimeError("call reset() before expert_turn()")
        plan = game.plan()
        if not plan:
            reason = "The task is done." if game.won else "I have no plan from here, so I look around."
            return ExpertTurn(reasoning=reason, actions=("look",))
        steps = f"{len(plan)} step{'s' if len(plan) > 1 else ''}"
        return ExpertTurn(
            reasoning=f"My task is to {game.task}. The plan from here takes {steps}; next I {plan[0]}.",
            actions=(plan[0],),
        )
