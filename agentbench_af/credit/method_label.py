"""A run's method label: its `method` (`<base>[+<weighting>]`) followed by an `@<name>` for each update-rule
setting that is not the default, in this order: the policy loss (`loss.policy`, e.g. `@gspo`), the update
schedule (`rl.token_passes`, `@lopti`) and dynamic sampling (`rollout.dynamic_sampling`, `@ds`). So
`grpo+ar@lopti` is AR with Lopti's two passes and `grpo@gspo` GRPO's advantages under GSPO's loss; a run
with the defaults is labelled by its method alone.

Tables name rows by the label, and a sweep's `grid.methods` may list labels: `split_label` turns one back
into the method and the overrides that give it.
"""

from __future__ import annotations

from agentbench_af.config import ConfigError

DEFAULT_POLICY = "ppo-clip"
SCHEDULES = {"lopti": "rl.token_passes=lopti"}
SAMPLING = {"ds": "rollout.dynamic_sampling=true"}


def method_label(method: str, policy: str = DEFAULT_POLICY, token_passes: str = "one",
                 dynamic_sampling: bool = False) -> str:
    """`method`, then `@<policy>` unless it is ppo-clip, `@lopti` for Lopti's passes, `@ds` for dynamic sampling."""
    parts = [method]
    if policy != DEFAULT_POLICY:
        parts.append(policy)
    if token_passes != "one":
        parts.append(token_passes)
    if dynamic_sampling:
        parts.append("ds")
    return "@".join(parts)


def label_of_config(config: dict) -> str:
    """The label of a run from its config mapping (a record's `config`; absent keys are defaults)."""
    return method_label(str(config.get("method", "")), (config.get("loss") or {}).get("policy", DEFAULT_POLICY),
                        (config.get("rl") or {}).get("token_passes", "one"),
                        bool((config.get("rollout") or {}).get("dynamic_sampling", False)))


def split_label(label: str) -> tuple[str, list[str]]:
    """(method, overrides) of a label: `grpo+ar@lopti` -> (`grpo+ar`, [`rl.token_passes=lopti`]). A suffix
    that is neither a schedule nor `ds` is taken as a policy loss (the config checks that it is registered)."""
    method, *suffixes = label.split("@")
    overrides: list[str] = []
    policies = [s for s in suffixes if s not in SCHEDULES and s not in SAMPLING]
    if not method or "" in suffixes or len(policies) > 1 or len(set(suffixes)) != len(suffixes):
        raise ConfigError(f"method label {label!r}: expected <method>[@<policy loss>][@lopti][@ds], each at most once")
    overrides += [f"loss.policy={p}" for p in policies]
    overrides += [SCHEDULES[s] for s in suffixes if s in SCHEDULES]
    overrides += [SAMPLING[s] for s in suffixes if s in SAMPLING]
    canonical = method_label(method, policies[0] if policies else DEFAULT_POLICY,
                             next((s for s in suffixes if s in SCHEDULES), "one"), any(s in SAMPLING for s in suffixes))
    if canonical != label:
        raise ConfigError(f"method label {label!r}: write it as {canonical!r} (policy loss, then schedule, then ds)")
    return method, overrides
