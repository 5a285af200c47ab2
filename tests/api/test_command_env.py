"""CommandGameEnv on a hand-made game: command matching, score-delta rewards, won/lost, invalid turns."""

from dataclasses import dataclass

from agentbench_af.api import ExpertTurn, Variant
from agentbench_af.api.command_env import CommandGameEnv


class CounterGame:
    """A three-room corridor: `go east` twice wins (+1 score each); `jump` loses."""

    def __init__(self) -> None:
        self.loaded, self.room, self.lost, self.closed = False, 0, False, False

    def load(self, path) -> None:
        self.loaded, self.room, self.lost, self.path = True, 0, False, str(path)

    @property
    def admissible(self) -> list[str]:
        return [] if self.won or self.lost else ["go east", "look", "jump"]

    @property
    def won(self) -> bool:
        return self.room == 2

    @property
    def score(self) -> int:
        return self.room

    def step(self, command: str) -> bool:
        if command == "go east":
            self.room += 1
            return True
        self.lost = command == "jump"
        return self.lost

    def close(self) -> None:
        self.closed = True


@dataclass(frozen=True)
class CorridorVariant(Variant):
    max_actions_per_turn: int = 1


class CorridorEnv(CommandGameEnv[CorridorVariant]):
    def _game_file(self, seed: int) -> str:
        return f"corridor-{seed}.game"

    def _make_game(self) -> CounterGame:
        return CounterGame()

    def _score(self, game) -> float:
        return float(game.score)

    def _render_state(self) -> str:
        return f"room {self._game.room}"

    def expert_turn(self) -> ExpertTurn:
        return ExpertTurn("east", ("go east",))

    @classmethod
    def rules(cls, variant: Variant) -> str:
        return "walk east"


def test_commands_match_case_and_space_insensitively_and_reward_is_the_score_delta():
    env = CorridorEnv(CorridorVariant())
    obs, info = env.reset(seed=4)
    assert env.game_file == "corridor-4.game" and info["admissible_actions"] == ["go east", "look", "jump"]
    assert obs.endswith("Available actions: go east, look, jump")
    _, reward, terminated, _, info = env.step("<answer>  GO   East </answer>")
    assert (reward, terminated, info["action_is_effective"]) == (1.0, False, True)
    _, reward, terminated, _, info = env.step("<answer>look</answer>")
    assert (reward, info["action_is_valid"], info["action_is_effective"]) == (0.0, True, False)
    _, reward, terminated, _, info = env.step("<answer>go east</answer>")
    assert (reward, terminated, info["success"]) == (1.0, True, True)


def test_unknown_command_is_invalid_and_never_reaches_the_game():
    env = CorridorEnv(CorridorVariant())
    env.reset(seed=0)
    obs, reward, _, _, info = env.step("<answer>go west</answer>")
    assert not info["action_is_valid"] and reward == env.variant.format_penalty
    assert obs.startswith("Invalid: 'go west' is not one of the available actions") and env._game.room == 0


def test_a_lost_game_is_a_terminal_failure_and_close_closes_the_game():
    env = CorridorEnv(CorridorVariant())
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("<answer>jump</answer>")
    assert terminated and not info["success"] and env.is_failure and reward == 0.0
    game = env._game
    env.close()
    assert game.closed and env._game is None
