"""The contract checker passes a correct environment and names the check a broken one fails."""

import itertools

import pytest

import agentbench_af
from agentbench_af.api import ActionOutcome, ExpertTurn
from agentbench_af.api.checker import CheckError, CheckReport, check_env, expert_episode
from agentbench_af.environments.frozenlake.env import FrozenLakeEnv
from agentbench_af.environments.frozenlake.variants import FrozenLakeVariant
from agentbench_af.formats.parse import parse_response

ALL_CHECKS = {
    "reset_deterministic",
    "expert_valid",
    "replay",
    "malformed",
    "valid_prefix",
    "turn_limit",
    "step_types",
}
FAST = dict(n_malformed=100)


def test_passes_frozenlake_by_id_with_the_full_corpus():
    report = agentbench_af.check_env("FrozenLake-4x4-v0")
    assert isinstance(report, CheckReport)
    assert set(report.passed) == ALL_CHECKS and report.n_malformed == 1000
    assert report.expert_success_rate == 1.0 and report.seeds == (0, 1, 1_000_000)
    assert set(report.timings) == ALL_CHECKS - {"step_types"} and report.seconds > 0
    assert report.summary().startswith("PASS FrozenLake-4x4-v0")


def test_passes_an_instance_with_custom_seeds():
    report = check_env(FrozenLakeEnv(FrozenLakeVariant(max_actions_per_turn=1)), seeds=[7, 8], **FAST)
    assert report.env_id == "FrozenLakeEnv" and report.seeds == (7, 8)
    assert "valid_prefix" not in report.passed  # needs two actions per turn


class _Counter(FrozenLakeEnv):
    calls = itertools.count()


class NondeterministicReset(_Counter):
    def _new_game(self, seed):
        super()._new_game(seed + next(self.calls))


class NaNReward(FrozenLakeEnv):
    def _apply_action(self, action):
        out = super()._apply_action(action)
        return ActionOutcome(out.valid, float("nan"), out.effective, out.message) if out.valid else out


class MovesOnUnknownWord(FrozenLakeEnv):
    def _apply_action(self, action):
        out = super()._apply_action(action)
        if not out.valid:
            super()._apply_action("Down")  # a bug: the state changes, then the action is reported invalid
        return out


class AcceptsAnyWord(FrozenLakeEnv):
    def _apply_action(self, action):
        out = super()._apply_action(action)
        return out if out.valid else ActionOutcome(valid=True)


class InvalidExpert(FrozenLakeEnv):
    def expert_turn(self):
        return ExpertTurn("I fly.", ("Fly",))


class LeakyRewards(_Counter):
    """Reward depends on how many steps this class has ever taken: replays differ."""

    def _apply_action(self, action):
        out = super()._apply_action(action)
        return (
            ActionOutcome(out.valid, float(next(self.calls) % 3), out.effective, out.message)
            if out.valid
            else out
        )


class IntBoolInfo(FrozenLakeEnv):
    def step(self, action):
        obs, r, term, trunc, info = super().step(action)
        info["num_actions"] = float(info["num_actions"])
        return obs, r, term, trunc, info


class TerminatesAtTurnLimit(FrozenLakeEnv):
    def step(self, action):
        obs, r, term, trunc, info = super().step(action)
        return obs, r, term or trunc, False, info


class CrashesOnUnicode(FrozenLakeEnv):
    def _apply_action(self, action):
        action.encode("ascii")  # raises UnicodeEncodeError on noise
        return super()._apply_action(action)


class ExtraPenaltyOnInvalid(FrozenLakeEnv):
    def step(self, action):
        obs, r, term, trunc, info = super().step(action)
        return obs, r - (0.0 if info["action_is_valid"] else 0.5), term, trunc, info


class AllOrNothing(FrozenLakeEnv):
    """Applies nothing when any action of the turn is unknown (the spec applies the valid prefix)."""

    def step(self, action):
        p = parse_response(action, max_actions=self.variant.max_actions_per_turn)
        if p.error is None and any(a.lower() not in {"left", "down", "right", "up"} for a in p.actions):
            return super().step("<answer>Fly</answer>")
        return super().step(action)


@pytest.mark.parametrize(
    ("cls", "check", "needle"),
    [
        (NondeterministicReset, "reset_deterministic", "differs"),
        (NaNReward, "step_types", "not a finite float"),
        (MovesOnUnknownWord, "malformed", "changed the state"),
        (AcceptsAnyWord, "malformed", "counted as valid"),
        (InvalidExpert, "expert_valid", "Fly"),
        (LeakyRewards, "replay", "reward differs"),
        (IntBoolInfo, "step_types", "info['num_actions']"),
        (TerminatesAtTurnLimit, "step_types", "terminated=True but the state's is_success or is_failure"),
        (CrashesOnUnicode, "malformed", "step raised UnicodeEncodeError"),
        (ExtraPenaltyOnInvalid, "malformed", "not format_penalty"),
        (AllOrNothing, "valid_prefix", "num_actions=0 (prefix alone: 1)"),
    ],
)
def test_broken_environments_fail_the_named_check(cls, check, needle):
    with pytest.raises(CheckError) as err:
        check_env(cls(FrozenLakeVariant()), **FAST)
    assert err.value.check == check, str(err.value)
    assert needle in str(err.value) and str(err.value).startswith(f"{cls.__name__}: check '{check}' failed")


def test_expert_episode_solves_a_deterministic_map():
    success, total, turns, expert_turns = expert_episode(agentbench_af.make("FrozenLake-4x4-v0"), seed=11)
    assert success and total == 1.0 and turns == len(expert_turns) <= 5
