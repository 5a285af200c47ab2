"""`CreditConfig`: the knobs of credit assignment (advantage estimator x token weighting), one frozen dataclass.

Field meanings (docs/method.md is the reference for the weighting knobs):
- estimator: a name in `ADVANTAGE_ESTIMATORS` (built in: grpo, rloo, gae, gigpo-step). In a run,
  `method` sets it (and `weighting`); a different value set alongside is an error.
- gamma: discount, per generated token for gae, per turn for gigpo-step's step returns.
- gae_lambda: GAE lambda. Default 1.0: advantages are Monte-Carlo returns minus the critic's values
  (unbiased, higher variance), the usual setting for LLM PPO (verl and OpenRLHF default to 1.0);
  set 0.95 for the classic control-RL bias/variance trade.
- gae_whiten: gae only. Whiten the advantages over all generated tokens of the batch (subtract their
  mean, divide by their Bessel-corrected std), as verl, TRL and OpenRLHF do for PPO; returns (the critic's
  targets) are left as they are. False keeps the raw A = return - V (docs/history/defaults.md says why
  the default is on).
- grpo_norm_by_std: divide group-centred returns by the group std (GRPO); False gives Dr. GRPO's
  centring only. Also applies to gigpo-step's step groups.
- weighting: a name in `TOKEN_WEIGHTINGS` (built in: uniform, actfocus, actfocus-entropy,
  actfocus-reasoning-only, action-only, top-entropy). The named methods fix some knobs whatever the fields
  say: `actfocus-entropy` uses energy_source = entropy; `actfocus-reasoning-only` uses lam = 0; `action-only` uses alpha = 0 and lam = 0; `uniform` and
  `top-entropy` read none of alpha / energy_lambda / tau / w_max / scope / energy_source / preserve_mass.
- alpha: weight of reasoning (and format) tokens. energy_lambda: lam, the share of an action token's
  weight that comes from its energy softmax. tau: softmax temperature. w_max: upper clip of action weights.
- scope: the action-token set A of the softmax: all action tokens of the trajectory, or of the turn.
- energy_source: old (rollout log-probs), ref (reference-model log-probs), entropy (rollout entropy).
  `old` is the spec's default; with tau 1 its softmax weights a token by 1/p of its draw (what the
  learning checks found per source: docs/history/defaults.md).
- preserve_mass: rescale each trajectory's ActFocus weights to sum to its number of generated tokens.
- format_role: whether `format` tokens count as reasoning (default) or action tokens.
- top_entropy_fraction: the kept fraction of generated tokens for `top-entropy`.
- gigpo_step_weight: omega in A = A_episode + omega * A_step (gigpo-step).
- The neighbourhood's methods (credit/neighbours.py, credit/empg.py; docs/method.md): ar_alpha (AR: weight
  ar_alpha * p + 1 - ar_alpha), stapo_prob and stapo_entropy_fraction (STAPO: silence positive-advantage
  tokens with p below stapo_prob among the stapo_entropy_fraction lowest-entropy tokens of the batch),
  aepo_beta (AEPO: weight 1 + aepo_beta * z(entropy)), carl_fraction (CARL: the kept share of turns),
  empg_k, empg_k_f, empg_zeta (EMPG's k, k_f and zeta), gtpo_beta (GTPO / GRPO-S's entropy weight).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from agentbench_af.credit.registry import estimator_spec, weighting_spec


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


@dataclass(frozen=True)
class CreditConfig:
    estimator: str = "grpo"
    gamma: float = 1.0
    gae_lambda: float = 1.0
    gae_whiten: bool = True
    grpo_norm_by_std: bool = True
    weighting: str = "uniform"
    alpha: float = 0.1
    energy_lambda: float = 1.0
    tau: float = 1.0
    w_max: float = 5.0
    scope: Literal["trajectory", "turn"] = "trajectory"
    energy_source: Literal["old", "ref", "entropy"] = "old"
    preserve_mass: bool = False
    format_role: Literal["reasoning", "action"] = "reasoning"
    top_entropy_fraction: float = 0.2
    gigpo_step_weight: float = 1.0
    ar_alpha: float = 0.3
    stapo_prob: float = 0.01
    stapo_entropy_fraction: float = 0.05
    aepo_beta: float = 0.2
    carl_fraction: float = 0.2
    empg_k: float = 1.0
    empg_k_f: float = 1.0
    empg_zeta: float = 0.1
    gtpo_beta: float = 0.1

    def __post_init__(self) -> None:
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
            self.scope in ("trajectory", "turn"),
            f"credit.scope must be trajectory or turn, got {self.scope!r}",
        )
        _check(
            self.energy_source in ("old", "ref", "entropy"),
            f"credit.energy_source must be old, ref or entropy, got {self.energy_source!r}",
        )
        _check(
            self.format_role in ("reasoning", "action"),
            f"credit.format_role must be reasoning or action, got {self.format_role!r}",
        )
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
