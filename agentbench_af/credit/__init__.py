"""Credit assignment: advantage estimators x token weightings, registered pure tensor functions.

    from agentbench_af.credit import CreditConfig, compute_advantages, compute_token_weights
    out = compute_advantages(batch, cfg)        # AdvantageOutput: advantages (B, T), returns (B, T) | None
    weights = compute_token_weights(batch, cfg)  # (B, T), stop-gradient, 0 off the response mask

The third axis, the policy loss (`loss.policy`), is registered here too (policy_losses.py) and run by
`train.update.loss.policy_loss`. Batch statistics go through `reduce.batch_reduce()` (global under data
parallelism). Importing this package registers the built-ins (advantages.py, weights.py,
policy_losses.py, neighbours.py, empg.py); installed plugins
(entry-point group `agentbench_af.credit`) load at the first lookup of a name (registry.py).
"""

# Registration order is the listing's and the tables' order: the built-ins first.
# isort: off
from agentbench_af.credit import advantages as _advantages  # noqa: F401  (registers the estimators)
from agentbench_af.credit import weights as _weights  # noqa: F401  (registers the weightings)
from agentbench_af.credit import policy_losses as _policy_losses  # noqa: F401  (registers the policy losses)
from agentbench_af.credit import neighbours as _neighbours  # noqa: F401  (the neighbourhood's weightings)
from agentbench_af.credit import empg as _empg  # noqa: F401  (the EMPG estimator)
# isort: on
from agentbench_af.credit.compute import compute_advantages, compute_token_weights, credit_needs
from agentbench_af.credit.config import CreditConfig
from agentbench_af.credit.energy import token_energy
from agentbench_af.credit.reduce import LOCAL, BatchReduce, batch_reduce, using_reduce
from agentbench_af.credit.registry import (
    ADVANTAGE_ESTIMATORS,
    POLICY_LOSSES,
    TOKEN_WEIGHTINGS,
    AdvantageOutput,
    Needs,
    PolicyLossOutput,
    estimator_for_method,
    get_advantage_estimator,
    get_token_weighting,
    method_names,
    policy_loss_spec,
    register_advantage,
    register_policy_loss,
    register_weighting,
)
from agentbench_af.credit.roles import credit_roles, credit_view
from agentbench_af.credit.weights import actfocus_weights, action_mask

__all__ = [
    "ADVANTAGE_ESTIMATORS",
    "LOCAL",
    "POLICY_LOSSES",
    "TOKEN_WEIGHTINGS",
    "AdvantageOutput",
    "BatchReduce",
    "PolicyLossOutput",
    "batch_reduce",
    "policy_loss_spec",
    "register_policy_loss",
    "using_reduce",
    "CreditConfig",
    "Needs",
    "actfocus_weights",
    "action_mask",
    "compute_advantages",
    "compute_token_weights",
    "credit_roles",
    "credit_view",
    "credit_needs",
    "estimator_for_method",
    "get_advantage_estimator",
    "get_token_weighting",
    "method_names",
    "register_advantage",
    "register_weighting",
    "token_energy",
]
