"""The contract checker: run every registered id through the text-env contract (docs/environments.md).

Checks, each raising `CheckError(check, env_id, message)` on the first violation:
  reset_deterministic  `reset(seed=s)` twice gives the same observation, info and render
  step_types           on every step taken: text observation, finite float reward, bool end flags,
                       typed info keys, truncation only at a limit and never together with termination
  expert_valid         the expert's turns are all valid (1..max_actions_per_turn actions)
  replay               a seed and a fixed response sequence (expert, random and malformed turns) give
                       the same transcript again, after another seed and on a fresh instance
  malformed            `n_malformed` malformed responses (and non-text inputs) never raise, are
                       invalid, cost exactly `format_penalty` and leave render() and actions_left as they were
  valid_prefix         `<answer>expert || Unknown</answer>` applies exactly the valid prefix, then is invalid
  turn_limit           `max_turns` invalid turns end in truncation, not termination
Left out: timing limits, memory, the rules text, and whether the expert succeeds (reported, not
required: stochastic variants make an optimal expert fail sometimes).
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from agentbench_af.api.env import TextEnv
from agentbench_af.api.malformed import malformed_responses, prefix_then_unknown
from agentbench_af.api.registry import DataUnavailable, make
from agentbench_af.api.types import REQUIRED_STEP_KEYS, ExpertTurn, StepInfo
from agentbench_af.formats.parse import format_response

_OPTIONAL_KEY_TYPES: dict[str, type] = {"invalid_reason": str, "turn": int, "actions_left": int, "seed": int}
_NON_TEXT_INPUTS: tuple[object, ...] = (None, b"<answer>Up</answer>", 42, ["<answer>Up</answer>"])

Transition = tuple[str, float, bool, bool, dict[str, Any]]


class CheckError(AssertionError):
    """A contract violation: which check, which environment, what went wrong."""

    def __init__(self, check: str, env_id: str, message: str) -> None:
        self.check, self.env_id, self.message = check, env_id, message
        super().__init__(f"{env_id}: check '{check}' failed: {message}")


@dataclass(frozen=True)
class CheckReport:
    """What passed, on which seeds, and how long each check took (seconds)."""

    env_id: str
    passed: tuple[str, ...]
    seeds: tuple[int, ...]
    n_malformed: int
    expert_success_rate: float
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return sum(self.timings.values())

    def summary(self) -> str:
        return (
            f"PASS {self.env_id}: {len(self.passed)} checks, {self.n_malformed} malformed, "
            f"expert success {self.expert_success_rate:.0%}, {self.seconds:.2f}s"
        )


def expert_response(turn: ExpertTurn) -> str:
    """The response text of an expert turn."""
    return format_response(turn.reasoning, list(turn.actions))


def expert_episode(env: TextEnv, seed: int) -> tuple[bool, float, int, list[ExpertTurn]]:
    """Play one episode with the expert: (success, total reward, turns, the expert's turns)."""
    env.reset(seed=seed)
    total, turns, done = 0.0, [], False
    info: StepInfo = {}
    while not done:
        turn = env.expert_turn()
        turns.append(turn)
        _, reward, terminated, truncated, info = env.step(expert_response(turn))
        total += reward
        done = terminated or truncated
    return bool(info.get("success", False)), total, len(turns), turns


def action_vocabulary(env: TextEnv, seeds: Sequence[int]) -> tuple[str, ...]:
    """Real action strings: the expert's actions and the admissible actions seen on `seeds` (sorted)."""
    words: set[str] = set()
    for seed in seeds:
        env.reset(seed=seed)
        words.update(env.admissible_actions() or ())
        _, _, _, turns = expert_episode(env, seed)
        for t in turns:
            words.update(t.actions)
        words.update(env.admissible_actions() or ())
    return tuple(sorted(w for w in words if w.strip()))


def random_response(env: TextEnv, vocab: Sequence[str], rng: random.Random) -> str:
    """1..max_actions_per_turn actions drawn from the admissible list (if any) or the vocabulary."""
    pool = list(env.admissible_actions() or ()) if rng.random() < 0.7 else []
    pool = pool or list(vocab) or ["Up"]
    k = rng.randint(1, env.variant.max_actions_per_turn)
    return format_response("I try something at random.", [rng.choice(pool) for _ in range(k)])


class _Checker:
    def __init__(
        self, env: TextEnv, env_id: str, seeds: tuple[int, ...], seed: int, replay_turns: int
    ) -> None:
        self.env, self.id, self.seeds, self.seed = env, env_id, seeds, seed
        self.replay_turns = replay_turns
        self.timings: dict[str, float] = {}
        self.passed: list[str] = []
        self.vocab: tuple[str, ...] = ()
        self.expert_success = 0.0
        self.current = "setup"

    def fail(self, check: str, message: str) -> CheckError:
        return CheckError(check, self.id, message)

    @contextmanager
    def check(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        self.current = name
        yield
        self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - t0
        self.passed.append(name)

    # ------------------------------------------------------------- typed, contract-checked stepping
    def reset(self, seed: int, env: TextEnv | None = None) -> tuple[str, dict[str, Any]]:
        env = env or self.env
        try:
            obs, info = env.reset(seed=seed)
        except DataUnavailable:
            raise  # not a contract violation: the id cannot run here (check-env reports SKIP)
        except Exception as exc:
            raise self.fail(self.current, f"reset(seed={seed}) raised {exc!r}") from exc
        if not isinstance(obs, str):
            raise self.fail("step_types", f"reset observation is {type(obs).__name__}, not str")
        self._check_info(info, "reset")
        return obs, dict(info)

    def step(self, text: object, env: TextEnv | None = None, label: str = "") -> Transition:
        env = env or self.env
        try:
            result = env.step(text)  # type: ignore[arg-type]
        except Exception as exc:
            raise self.fail(self.current, f"step raised {exc!r} on {label or repr(text)[:80]}") from exc
        if not (isinstance(result, tuple) and len(result) == 5):
            raise self.fail("step_types", f"step returned {type(result).__name__}, not a 5-tuple")
        obs, reward, terminated, truncated, info = result
        where = f"on {label or repr(text)[:80]} (during {self.current})"
        if not isinstance(obs, str):
            raise self.fail("step_types", f"observation is {type(obs).__name__}, not str, {where}")
        if not isinstance(reward, float) or isinstance(reward, bool) or not math.isfinite(reward):
            raise self.fail("step_types", f"reward {reward!r} is not a finite float {where}")
        if type(terminated) is not bool or type(truncated) is not bool:
            raise self.fail(
                "step_types", f"terminated/truncated {terminated!r}/{truncated!r} are not bool {where}"
            )
        self._check_info(info, f"step {where}")
        v = env.variant
        at_limit = env.turn >= v.max_turns or env.actions_left <= 0
        if terminated != env._terminal():  # the state's own end test (is_success or is_failure)
            raise self.fail(
                "step_types",
                f"terminated={terminated} but the state's is_success or is_failure is {not terminated} {where}",
            )
        if terminated and truncated:
            raise self.fail("step_types", f"terminated and truncated both True {where}")
        if truncated != (at_limit and not terminated):
            raise self.fail(
                "step_types",
                f"truncated={truncated} at turn {env.turn}/{v.max_turns}, actions left {env.actions_left}, "
                f"terminated={terminated} {where}: truncation must happen exactly at a limit",
            )
        if not info["action_is_valid"]:
            reason = info.get("invalid_reason", "")
            if not reason or "\n" in reason:
                raise self.fail(
                    "step_types", f"invalid turn needs a one-line invalid_reason, got {reason!r} {where}"
                )
        return obs, reward, terminated, truncated, dict(info)

    def expert(self, env: TextEnv | None = None) -> ExpertTurn:
        env = env or self.env
        try:
            return env.expert_turn()
        except Exception as exc:
            raise self.fail(
                self.current, f"expert_turn raised {exc!r} at turn {env.turn} of seed {env.seed_used}"
            ) from exc

    def _check_info(self, info: object, where: str) -> None:
        if not isinstance(info, dict):
            raise self.fail("step_types", f"info is {type(info).__name__}, not dict ({where})")
        for key, typ in {**REQUIRED_STEP_KEYS, **_OPTIONAL_KEY_TYPES}.items():
            if key not in info:
                if key in REQUIRED_STEP_KEYS:
                    raise self.fail("step_types", f"info lacks {key!r} ({where})")
                continue
            val = info[key]
            ok = type(val) is bool if typ is bool else isinstance(val, typ) and not isinstance(val, bool)
            if not ok:
                raise self.fail("step_types", f"info[{key!r}]={val!r} is not {typ.__name__} ({where})")
        adm = info.get("admissible_actions")
        if adm is not None and not (isinstance(adm, list) and all(isinstance(a, str) for a in adm)):
            raise self.fail("step_types", f"info['admissible_actions'] is not a list of str ({where})")

    # ------------------------------------------------------------- the checks
    def reset_deterministic(self) -> None:
        """Reset every seed, then every seed again (other seeds in between when there are several)."""
        first = {s: (*self.reset(s), self.env.render()) for s in self.seeds}
        for s in self.seeds:
            second = (*self.reset(s), self.env.render())
            for name, x, y in zip(("observation", "info", "render"), first[s], second, strict=True):
                if x != y:
                    raise self.fail("reset_deterministic", f"seed {s}: {name} differs: {x!r} vs {y!r}")

    def expert_valid(self) -> None:
        env, v = self.env, self.env.variant
        successes, words = 0, set[str]()
        for s in self.seeds:
            self.reset(s)
            words.update(env.admissible_actions() or ())
            done = False
            info: dict[str, Any] = {}
            while not done:
                turn = self.expert()
                if not isinstance(turn, ExpertTurn) or not 1 <= len(turn.actions) <= v.max_actions_per_turn:
                    raise self.fail("expert_valid", f"seed {s} turn {env.turn + 1}: bad expert turn {turn!r}")
                words.update(turn.actions)
                _, _, terminated, truncated, info = self.step(expert_response(turn), label="expert turn")
                if not info["action_is_valid"]:
                    raise self.fail(
                        "expert_valid",
                        f"seed {s}: expert turn {turn.actions} invalid: {info.get('invalid_reason')}",
                    )
                words.update(env.admissible_actions() or ())
                done = terminated or truncated
            successes += bool(info.get("success"))
        self.expert_success = successes / len(self.seeds)
        self.vocab = tuple(sorted(w for w in words if w.strip()))

    def _play(
        self, s: int, responses: list[str] | None, rng: random.Random, env: TextEnv | None = None
    ) -> tuple[list[str], list[Transition]]:
        """Play seed `s`: replay `responses`, or (None) choose expert/random/malformed turns with `rng`."""
        env = env or self.env
        obs, info = self.reset(s, env)
        transcript: list[Transition] = [(obs, 0.0, False, False, info)]
        chosen: list[str] = []
        bad = [
            m.text
            for m in malformed_responses(
                17,
                action_words=self.vocab,
                max_actions_per_turn=env.variant.max_actions_per_turn,
                seed=rng.randrange(1 << 30),
                huge=False,
            )
        ]
        done = False
        limit = len(responses) if responses is not None else self.replay_turns
        while not done and len(chosen) < limit:
            if responses is not None:
                text = responses[len(chosen)]
            else:
                u = rng.random()
                text = (
                    expert_response(self.expert(env))
                    if u < 0.5
                    else (random_response(env, self.vocab, rng) if u < 0.8 else rng.choice(bad))
                )
            chosen.append(text)
            t = self.step(text, env, label=f"replay turn {text[:60]!r}")
            transcript.append(t)
            done = t[2] or t[3]
        return chosen, transcript

    def replay(self) -> None:
        """Play every seed (at most `replay_turns` turns), replay them all, then the first on a fresh instance."""
        played = [self._play(s, None, random.Random(self.seed * 7919 + i)) for i, s in enumerate(self.seeds)]
        rng = random.Random(self.seed)
        where = "after other seeds" if len(self.seeds) > 1 else "after a reset"
        for s, (responses, first) in zip(self.seeds, played, strict=True):
            self._compare(s, where, responses, first, self._play(s, responses, rng)[1])
        fresh = type(self.env)(variant=self.env.variant)
        try:
            responses, first = played[0]
            again = self._play(self.seeds[0], responses, rng, fresh)[1]
            self._compare(self.seeds[0], "on a fresh instance", responses, first, again)
        finally:
            fresh.close()

    def _compare(
        self, s: int, where: str, responses: list[str], a: list[Transition], b: list[Transition]
    ) -> None:
        names = ("observation", "reward", "terminated", "truncated", "info")
        if len(a) != len(b):
            raise self.fail("replay", f"seed {s} {where}: {len(a) - 1} turns then {len(b) - 1} turns")
        for turn, (x, y) in enumerate(zip(a, b, strict=True)):
            for name, u, w in zip(names, x, y, strict=True):
                if u != w:
                    after = f" after {responses[turn - 1][:80]!r}" if turn else " at reset"
                    raise self.fail(
                        "replay", f"seed {s} {where}: {name} differs at turn {turn}{after}: {u!r} vs {w!r}"
                    )

    def _long_episode_env(self, n: int) -> TextEnv:
        """An instance whose turn limit outlasts the corpus (fewer resets); the env itself if none can be built."""
        try:
            return type(self.env)(variant=dataclasses.replace(self.env.variant, max_turns=2 * n + 100))
        except (TypeError, ValueError):
            return self.env

    def _expert_step(self, env: TextEnv) -> bool:
        """One expert turn (it must be valid); True when the episode ended."""
        _, _, terminated, truncated, info = self.step(expert_response(self.expert(env)), env, "expert turn")
        if not info["action_is_valid"]:
            raise self.fail(
                "expert_valid", f"expert turn invalid at turn {env.turn}: {info['invalid_reason']}"
            )
        return terminated or truncated

    def malformed(self, n: int) -> None:
        """Step the corpus through long episodes, with an expert turn now and then to vary the state."""
        env = self._long_episode_env(n)
        penalty = env.variant.format_penalty
        rng = random.Random(self.seed)
        corpus = malformed_responses(
            n, action_words=self.vocab, max_actions_per_turn=env.variant.max_actions_per_turn, seed=self.seed
        )
        cases: list[tuple[object, str]] = [(m.text, f"{m.kind} case {m.preview(60)}") for m in corpus]
        cases += [(x, f"non-text case {x!r}") for x in _NON_TEXT_INPUTS]
        episodes, done = 0, True
        try:
            for text, preview in cases:
                while done or rng.random() < 0.015:
                    if done:
                        self.reset(self.seeds[episodes % len(self.seeds)], env)
                        episodes, done = episodes + 1, False
                    else:
                        done = self._expert_step(env)
                before = (env.render(), env.actions_left)
                _, reward, terminated, truncated, info = self.step(text, env, label=preview)
                if info["action_is_valid"] or info["num_actions"] != 0 or info["action_is_effective"]:
                    raise self.fail("malformed", f"{preview} counted as valid/applied: {info}")
                if reward != penalty:
                    raise self.fail(
                        "malformed", f"{preview} got reward {reward!r}, not format_penalty {penalty!r}"
                    )
                if (env.render(), env.actions_left) != before or terminated:
                    raise self.fail(
                        "malformed", f"{preview} changed the state (render or actions_left) or terminated"
                    )
                done = truncated
        finally:
            if env is not self.env:
                env.close()

    def valid_prefix(self) -> None:
        env = self.env
        rng = random.Random(self.seed + 1)
        for s in self.seeds:
            self.reset(s)
            turn = self.expert()
            prefix = list(turn.actions[: env.variant.max_actions_per_turn - 1])
            _, r_ok, term, _, info_ok = self.step(
                format_response(turn.reasoning, prefix), label="prefix alone"
            )
            if term or env.actions_left == 0:  # later actions are never read once the episode has ended
                continue
            expected = (env.render(), env.actions_left)
            self.reset(s)
            text = prefix_then_unknown(prefix, rng)
            _, r, _, _, info = self.step(text, label=text)
            if info["action_is_valid"] or info["num_actions"] != info_ok["num_actions"]:
                raise self.fail(
                    "valid_prefix",
                    f"seed {s}: {text!r} gave valid={info['action_is_valid']}, num_actions={info['num_actions']} (prefix alone: {info_ok['num_actions']})",
                )
            if (env.render(), env.actions_left) != expected:
                raise self.fail(
                    "valid_prefix", f"seed {s}: {text!r} did not leave the state the prefix alone leaves"
                )
            if not math.isclose(r, r_ok + env.variant.format_penalty, abs_tol=1e-9):
                raise self.fail(
                    "valid_prefix", f"seed {s}: reward {r} is not prefix reward {r_ok} + format_penalty"
                )

    def turn_limit(self) -> None:
        v = self.env.variant
        self.reset(self.seeds[0])
        for k in range(1, v.max_turns + 1):
            _, _, terminated, truncated, _ = self.step("<answer></answer>", label="empty answer")
            if terminated or truncated != (k == v.max_turns):
                raise self.fail(
                    "turn_limit", f"turn {k}/{v.max_turns}: terminated={terminated}, truncated={truncated}"
                )


def check_env(
    env_or_id: TextEnv | str,
    *,
    seeds: Sequence[int] | None = None,
    n_malformed: int = 1000,
    replay_turns: int = 20,
    seed: int = 0,
) -> CheckReport:
    """Run every check on an environment instance or registered id; raise `CheckError` on a violation.

    `seeds` default to two training seeds and one evaluation seed of the variant; replayed episodes
    are cut after `replay_turns` turns; `seed` drives the checker's own random choices (response
    mix, malformed corpus). The malformed corpus runs on a second instance whose `max_turns` is
    raised so that it needs few resets (the turn limit itself is checked on the given instance).
    """
    own = isinstance(env_or_id, str)
    env = make(env_or_id) if isinstance(env_or_id, str) else env_or_id
    env_id = env_or_id if isinstance(env_or_id, str) else type(env).__name__
    if not isinstance(env, TextEnv):
        raise CheckError("api", env_id, f"{type(env).__name__} is not a TextEnv")
    v = env.variant
    seeds_t = (
        tuple(int(s) for s in seeds) if seeds else (v.train_seeds[0], v.train_seeds[0] + 1, v.eval_seeds[0])
    )
    c = _Checker(env, env_id, seeds_t, seed, replay_turns)
    try:
        with c.check("reset_deterministic"):
            c.reset_deterministic()
        with c.check("expert_valid"):
            c.expert_valid()
        with c.check("replay"):
            c.replay()
        with c.check("malformed"):
            c.malformed(n_malformed)
        if v.max_actions_per_turn >= 2:
            with c.check("valid_prefix"):
                c.valid_prefix()
        with c.check("turn_limit"):
            c.turn_limit()
        c.passed.append("step_types")
    finally:
        if own:
            env.close()
    return CheckReport(env_id, tuple(c.passed), seeds_t, n_malformed, c.expert_success, dict(c.timings))


__all__ = [
    "CheckError",
    "CheckReport",
    "action_vocabulary",
    "check_env",
    "expert_episode",
    "expert_response",
    "random_response",
]
