"""`CreditConfig`: the knobs of credit assignment (advantage estimator x token weighting), one frozen dataclass.

Each field is documented by the `#:` comment lines above it (docs/method.md is the reference for the
weighting knobs; `agentbench-af config credit --explain` prints them). In a run, `method` sets
`estimator` and `weighting` (`train.config.MethodCredit`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from agentbench_af.config import check_choices
from agentbench_af.credit.registry import estimator_spec, weighting_spec


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


@dataclass(frozen=True)
class CreditConfig:
    #: a name in `ADVANTAGE_ESTIMATORS` (built in: grpo, rloo, gae, gigpo-step); in a run, `method` sets it
    estimator: str = "grpo"
    #: discount, per generated token for gae, per turn for gigpo-step's step returns
    gamma: float = 1.0
    #: GAE lambda. 1.0: advantages are Monte-Carlo returns minus the critic's values (unbiased, higher
    #: variance), the usual setting for LLM PPO (verl and OpenRLHF default to 1.0); 0.95 is the classic
    #: control-RL bias/variance trade
    gae_lambda: float = 1.0
    #: gae only: whiten the advantages over all generated tokens of the batch (subtract their mean, divide by
    #: their Bessel-corrected std), as verl, TRL and OpenRLHF do for PPO; returns (the critic's targets) are
    #: left as they are. False keeps the raw A = return - V (docs/history/defaults.md says why it is on)
    gae_whiten: bool = True
    #: divide group-centred returns by the group std (GRPO); False gives Dr. GRPO's centring only. Also
    #: applies to gigpo-step's step groups
    grpo_norm_by_std: bool = True
    #: a name in `TOKEN_WEIGHTINGS` (built in: uniform, actfocus, actfocus-entropy, actfocus-reasoning-only,
    #: action-only, top-entropy); in a run, `method` sets it. The named methods fix some knobs whatever the
    #: fields say: actfocus-entropy uses energy_source = entropy, actfocus-reasoning-only lam = 0, action-only
    #: alpha = 0 and lam = 0; uniform and top-entropy read none of alpha / energy_lambda / tau / w_max / scope /
    #: energy_source / preserve_mass
    weighting: str = "uniform"
    #: weight of reasoning (and format) tokens
    alpha: float = 0.1
    #: lam, the share of an action token's weight that comes from its energy softmax
    energy_lambda: float = 1.0
    #: softmax temperature of the energies
    tau: float = 1.0
    #: upper clip of action weights
    w_max: float = 5.0
    #: the action-token set A of the softmax: all action tokens of the trajectory, or of the turn
    scope: Literal["trajectory", "turn"] = "trajectory"
    #: old (rollout log-probs), ref (reference-model log-probs), entropy (rollout entropy). old is the spec's
    #: default; with tau 1 its softmax weights a token by 1/p of its draw (what the learning checks found per
    #: source: docs/history/defaults.md)
    energy_source: Literal["old", "ref", "entropy"] = "old"
    #: rescale each trajectory's ActFocus weights to sum to its number of generated tokens
    preserve_mass: bool = False
    #: whether `format` tokens count as reasoning (default) or action tokens
    format_role: Literal["reasoning", "action"] = "reasoning"
    #: the kept fraction of generated tokens for top-entropy
    top_entropy_fraction: float = 0.2
    #: omega in A = A_episode + omega * A_step (gigpo-step)
    gigpo_step_weight: float = 1.0
    #: AR (credit/neighbours.py): a token's weight is ar_alpha * p_old + 1 - ar_alpha
    ar_alpha: float = 0.3
    #: STAPO: silence positive-advantage tokens whose old probability is below this ...
    stapo_prob: float = 0.01
    #: ... among this fraction of the batch's lowest-entropy tokens
    stapo_entropy_fraction: float = 0.05
    #: AEPO (advantage half): weight 1 + aepo_beta * z(entropy)
    aepo_beta: float = 0.2
    #: CARL (a reading of its abstract): the kept share of turns
    carl_fraction: float = 0.2
    #: EMPG's k: step-level entropy modulation g = exp(-k H), rescaled to batch mean 1
    empg_k: float = 1.0
    #: EMPG's k_f: the future-clarity term's entropy scale
    empg_k_f: float = 1.0
    #: EMPG's zeta: the future-clarity term's weight
    empg_zeta: float = 0.1
    #: GTPO / GRPO-S: the entropy weight of the token- or sequence-level reward
    gtpo_beta: float = 0.1

    def __post_init__(self) -> None:
        check_choices(self, "credit")
        estimator_spec(self.estimator)  # the registry knows nothing of this class: no import cycle
        weighting_spec(self.weighting)
        for name in (
            "gamma",
            "gae_lambda",
            "alpha",
            "energy_lambda",
            "tau",
            "w_max",
            "top_entropy_fraction",
            "gigpo_step_weight",
            "ar_alpha",
            "stapo_prob",
            "stapo_entropy_fraction",
            "aepo_beta",
            "carl_fraction",
            "empg_k",
            "empg_k_f",
            "empg_zeta",
            "gtpo_beta",
        ):
            value = getattr(self, name)
            _check(
                isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value),
                f"credit.{name} must be a finite number, got {value!r}",
            )
        _check(0.0 <= self.gamma <= 1.0, f"credit.gamma must be in [0, 1], got {self.gamma}")
        _check(0.0 <= self.gae_lambda <= 1.0, f"credit.gae_lambda must be in [0, 1], got {self.gae_lambda}")
        _check(self.alpha >= 0.0, f"credit.alpha must be >= 0, got {self.alpha}")
        _check(self.energy_lambda >= 0.0, f"credit.energy_lambda must be >= 0, got {self.energy_lambda}")
        _check(self.tau > 0.0, f"credit.tau must be > 0, got {self.tau}")
        _check(self.w_max > 0.0, f"credit.w_max must be > 0, got {self.w_max}")
        _check(
            0.0 < self.top_entropy_fraction <= 1.0,
            f"credit.top_entropy_fraction must be in (0, 1], got {self.top_entropy_fraction}",
        )
        _check(
            self.gigpo_step_weight >= 0.0,
            f"credit.gigpo_step_weight must be >= 0, got {self.gigpo_step_weight}",
        )
        for name in ("ar_alpha", "stapo_prob"):
            _check(0.0 <= getattr(self, name) <= 1.0, f"credit.{name} must be in [0, 1], got {getattr(self, name)}")
        for name in ("stapo_entropy_fraction", "carl_fraction"):
            _check(0.0 < getattr(self, name) <= 1.0, f"credit.{name} must be in (0, 1], got {getattr(self, name)}")
        for name in ("aepo_beta", "empg_k", "empg_k_f", "empg_zeta", "gtpo_beta"):
            _check(getattr(self, name) >= 0.0, f"credit.{name} must be >= 0, got {getattr(self, name)}")
        for name in ("gae_whiten", "grpo_norm_by_std", "preserve_mass"):
            _check(isinstance(getattr(self, name), bool), f"credit.{name} must be true or false")
