"""Name -> method registries for the three axes of a method: advantage estimators, token weightings and
policy losses, with what each one needs and the source it follows.

A new method is one decorated function (in this package, in an installed plugin's `agentbench_af.credit`
entry point, or in a module given to `--import`):

    @register_advantage("my-estimator", method="mine", needs=Needs(critic=True))
    def my_estimator(batch: RolloutBatch, cfg: CreditConfig) -> AdvantageOutput: ...

    @register_weighting("my-weights")
    def my_weights(batch: RolloutBatch, cfg: CreditConfig) -> torch.Tensor: ...  # (B, T)

    @register_policy_loss("my-loss")
    def my_loss(logprobs, old_logprobs, advantages, weights, mask, cfg, reduce) -> PolicyLossOutput: ...

    @register_policy_loss("my-entropy-loss", needs_entropy=True)  # also gets each token's entropy (B, T)
    def my_entropy_loss(logprobs, old_logprobs, advantages, weights, mask, cfg, reduce, *, entropy): ...

A run names the first two in `method` (`grpo+actfocus`) and the third in `loss.policy` (`gspo`);
`source` (an arXiv id, a paper, a library) is what `agentbench-af methods` prints beside the name.

An estimator's `method` is the name it takes in a run's `method` (`ppo` for `gae`; default: its own
name). `needs` says what the harness must build or check: a critic (`batch.values`), a reference model
(`batch.ref_logprobs`), step groups (`batch.turn_obs_key`), groups of two or more rollouts per prompt;
it is a `Needs` or a function of the credit
config returning one (a weighting whose need depends on a knob). The first lookup of a name loads the
installed plugins (`agentbench_af.plugins`). This module knows nothing of `CreditConfig` (the config
validates names against it); the dispatchers live in `credit.compute`.
Left out: per-method config classes (every knob lives in `CreditConfig`, a policy loss's in `LossConfig`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from agentbench_af.plugins import CREDIT_GROUP, failed_hint, load_entry_points
from agentbench_af.rollout.batch import RolloutBatch


@dataclass(frozen=True)
class AdvantageOutput:
    advantages: torch.Tensor  # (B, T): zero outside response_mask
    returns: torch.Tensor | None = None  # (B, T): value targets (estimators with a critic), else None


@dataclass(frozen=True)
class Needs:
    """What a credit method reads beyond the rollouts; the training loop builds exactly this."""

    critic: bool = False  # batch.values from a value head (and returns to train it on)
    reference: bool = False  # batch.ref_logprobs from a frozen copy of the warm-start policy
    step_groups: bool = False  # batch.turn_obs_key: one observation key per (trajectory, turn)
    groups: bool = False  # compares the rollouts of one prompt: rollout.group_size >= 2 (else advantage 0)

    def __or__(self, other: Needs) -> Needs:
        return Needs(self.critic or other.critic, self.reference or other.reference,
                     self.step_groups or other.step_groups, self.groups or other.groups)


@dataclass(frozen=True)
class PolicyLossOutput:
    per_token: torch.Tensor  # (B, T): the weighted per-token loss the harness aggregates (loss.agg)
    metrics: dict[str, float]  # the loss's own diagnostics (fraction clipped, tokens selected, ...)


AdvantageFn = Callable[[RolloutBatch, Any], AdvantageOutput]  # (batch, CreditConfig)
# (logprobs, old_logprobs, advantages, weights, mask, LossConfig, credit.reduce.BatchReduce), tensors (B, T);
# a loss registered with needs_entropy=True also takes the keyword `entropy` (B, T)
PolicyLossFn = Callable[..., PolicyLossOutput]
WeightFn = Callable[[RolloutBatch, Any], torch.Tensor]  # (batch, CreditConfig) -> (B, T)
NeedsSpec = Needs | Callable[[Any], Needs]  # a Needs, or CreditConfig -> Needs


@dataclass(frozen=True)
class EstimatorSpec:
    name: str
    fn: AdvantageFn
    method: str  # its name in a run's `method` (base before the `+`)
    needs: NeedsSpec = Needs()
    source: str = ""


@dataclass(frozen=True)
class WeightingSpec:
    name: str
    fn: WeightFn
    needs: NeedsSpec = Needs()
    source: str = ""


@dataclass(frozen=True)
class PolicyLossSpec:
    name: str
    fn: PolicyLossFn
    agg: str | None = None  # the aggregation it requires (Dr. GRPO's constant normaliser), None: any
    source: str = ""
    needs_entropy: bool = False  # called with `entropy=` (B, T), the current policy's detached token entropies


ADVANTAGE_ESTIMATORS: dict[str, EstimatorSpec] = {}
TOKEN_WEIGHTINGS: dict[str, WeightingSpec] = {}
POLICY_LOSSES: dict[str, PolicyLossSpec] = {}


def _check_name(name: str, kind: str) -> None:
    if not isinstance(name, str) or not name or "+" in name or name != name.strip().lower():
        raise ValueError(f"{kind} name {name!r} must be non-empty lower-case text without '+'")


def register_advantage(name: str, method: str | None = None, needs: NeedsSpec = Needs(),
                       source: str = "") -> Callable[[AdvantageFn], AdvantageFn]:
    """Register an estimator; `method` (default `name`) is its name in a run's `method`."""
    method = method or name
    _check_name(name, "advantage estimator")
    _check_name(method, "method")

    def decorator(fn: AdvantageFn) -> AdvantageFn:
        old = ADVANTAGE_ESTIMATORS.get(name)
        if old is not None and old.fn is not fn:
            raise ValueError(f"advantage estimator {name!r} is already registered")
        taken = [s.name for s in ADVANTAGE_ESTIMATORS.values() if s.method == method and s.name != name]
        if taken:
            raise ValueError(f"method {method!r} already names advantage estimator {taken[0]!r}")
        ADVANTAGE_ESTIMATORS[name] = EstimatorSpec(name, fn, method, needs, source)
        return fn

    return decorator


def register_weighting(name: str, needs: NeedsSpec = Needs(),
                       source: str = "") -> Callable[[WeightFn], WeightFn]:
    """Register a token weighting under `name` (the part after `+` in a run's `method`)."""
    _check_name(name, "token weighting")

    def decorator(fn: WeightFn) -> WeightFn:
        old = TOKEN_WEIGHTINGS.get(name)
        if old is not None and old.fn is not fn:
            raise ValueError(f"token weighting {name!r} is already registered")
        TOKEN_WEIGHTINGS[name] = WeightingSpec(name, fn, needs, source)
        return fn

    return decorator


def register_policy_loss(name: str, agg: str | None = None, source: str = "",
                         needs_entropy: bool = False) -> Callable[[PolicyLossFn], PolicyLossFn]:
    """Register a policy loss under `name` (a run's `loss.policy`); `agg`: the one aggregation it allows;
    `needs_entropy`: it takes a keyword argument `entropy`, each token's entropy under the current policy
    (B, T, detached), which a loss registered without it never receives."""
    _check_name(name, "policy loss")

    def decorator(fn: PolicyLossFn) -> PolicyLossFn:
        old = POLICY_LOSSES.get(name)
        if old is not None and old.fn is not fn:
            raise ValueError(f"policy loss {name!r} is already registered")
        POLICY_LOSSES[name] = PolicyLossSpec(name, fn, agg, source, needs_entropy)
        return fn

    return decorator


def _lookup(table: dict, kind: str, name: str):
    if name not in table:
        load_entry_points(CREDIT_GROUP)
    if name not in table:
        raise ValueError(f"unknown {kind} {name!r}; registered: {', '.join(sorted(table))}{failed_hint()}")
    return table[name]


def estimator_spec(name: str) -> EstimatorSpec:
    return _lookup(ADVANTAGE_ESTIMATORS, "advantage estimator", name)


def weighting_spec(name: str) -> WeightingSpec:
    return _lookup(TOKEN_WEIGHTINGS, "token weighting", name)


def policy_loss_spec(name: str) -> PolicyLossSpec:
    return _lookup(POLICY_LOSSES, "policy loss", name)


def get_advantage_estimator(name: str) -> AdvantageFn:
    return estimator_spec(name).fn


def get_token_weighting(name: str) -> WeightFn:
    return weighting_spec(name).fn


def method_names() -> list[str]:
    """The estimators' method names in registration order (built-ins first, then plugins)."""
    load_entry_points(CREDIT_GROUP)
    return [s.method for s in ADVANTAGE_ESTIMATORS.values()]


def estimator_for_method(base: str) -> str:
    """The estimator a method base names (`ppo` -> `gae`); ValueError listing the method names."""
    load_entry_points(CREDIT_GROUP)
    for spec in ADVANTAGE_ESTIMATORS.values():
        if spec.method == base:
            return spec.name
    raise ValueError(f"base must be one of {sorted(method_names())}{failed_hint()}")


def resolve_needs(needs: NeedsSpec, cfg: Any) -> Needs:
    return needs(cfg) if callable(needs) else needs
