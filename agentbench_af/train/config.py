"""`TrainConfig`: one frozen dataclass tree per run, loaded from YAML with `key.sub=value` overrides.

A method is `estimator x weighting` written as `base[+weighting]`: `base` is an estimator's method name
(built in: `ppo` = GAE with a value head, `grpo`, `rloo`, `gigpo` = step-level groups) and `weighting`
a registered token weighting (built in: `actfocus`, `actfocus-reasoning-only`, `action-only`,
`top-entropy`, or `uniform`, the default), both read from the credit registry. `method` is the only
place they are chosen: `credit.estimator` and `credit.weighting` are derived from it on every read
(`MethodCredit`), and a different value given for either is an error; set the other `credit.*` knobs
directly. What the pair needs (a critic, a
reference model) comes from their registrations. `imports` names modules to import before the config
is built (plugins that register methods or environments; `train_config_from_dict` imports them).
Every field is documented by the `#:` comment lines above it (`agentbench-af config --explain` prints
them). Saved beside every result.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Literal

from agentbench_af.config import OMIT_WHEN_UNSET, ConfigError, check_choices, from_dict
from agentbench_af.credit.config import CreditConfig
from agentbench_af.models.lora import LLAMA_TARGETS, LoraSettings
from agentbench_af.plugins import PluginError, import_modules
from agentbench_af.rollout.types import RolloutConfig
from agentbench_af.train.update.loss import LossConfig

REPORTERS = ("tensorboard", "wandb")
#: `rl.token_passes`: each update schedule and its source (`agentbench-af methods` lists them)
TOKEN_PASSES = {"one": "one optimizer step per minibatch on every generated token (PPO)",
                "lopti": "Lopti, arXiv 2505.12929: p_old < rl.lopti_threshold first, then the rest"}


def _check_counts(cfg: Any, section: str, positive: tuple[str, ...] = (), **minimums: int) -> None:
    """Raise ValueError naming `section.field` for a field below its minimum (or not > 0 for `positive`)."""
    for name in (*minimums, *positive):
        value = getattr(cfg, name)
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{section}.{name} must be a finite number, got {value!r}")
    for name, lo in minimums.items():
        if getattr(cfg, name) < lo:
            raise ValueError(f"{section}.{name} must be >= {lo}, got {getattr(cfg, name)!r}")
    for name in positive:
        if not getattr(cfg, name) > 0:
            raise ValueError(f"{section}.{name} must be > 0, got {getattr(cfg, name)!r}")


def parse_method(method: str) -> tuple[str, str]:
    """`"grpo+actfocus"` -> `("grpo", "actfocus")`, `"ppo"` -> `("gae", "uniform")`, from the credit
    registry; raises ValueError listing the valid parts."""
    from agentbench_af.credit import TOKEN_WEIGHTINGS, estimator_for_method, get_token_weighting

    base, _, weighting = method.strip().lower().partition("+")
    weighting = weighting or "uniform"
    try:
        estimator = estimator_for_method(base)
    except ValueError as exc:
        raise ValueError(f"method {method!r}: {exc}") from None
    try:
        get_token_weighting(weighting)
    except ValueError:
        raise ValueError(f"method {method!r}: weighting must be one of {sorted(TOKEN_WEIGHTINGS)}") from None
    return estimator, weighting


def method_conflict(method: str, credit: dict[str, Any]) -> str | None:
    """One line when a `credit` mapping sets `estimator`/`weighting` to something `method` does not."""
    chosen = dict(zip(("estimator", "weighting"), parse_method(method), strict=True))
    for key, value in chosen.items():
        if key in credit and credit[key] != value:
            return (f"credit.{key} is {credit[key]!r} but method {method!r} sets it to {value!r}: `method` is the "
                    f"single source of estimator and weighting (drop credit.{key}, or change method)")
    return None


class MethodCredit:
    """The `credit` field of `TrainConfig`, a derived value: the section as given, read back with
    `estimator` and `weighting` from the config's `method` (the one place they are chosen). A data
    descriptor, so that construction, `dataclasses.replace`, `asdict` (hence the config hash) and equality
    all see the derived section."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}_given"

    def __get__(self, cfg: Any, owner: type | None = None) -> CreditConfig:
        if cfg is None:
            return CreditConfig()  # the field's default
        given: CreditConfig = cfg.__dict__[self.slot]
        estimator, weighting = parse_method(cfg.method)
        if (given.estimator, given.weighting) == (estimator, weighting):
            return given
        return dataclasses.replace(given, estimator=estimator, weighting=weighting)

    def __set__(self, cfg: Any, given: CreditConfig) -> None:
        cfg.__dict__[self.slot] = given  # once, by the frozen dataclass's __init__

    def given(self, cfg: Any) -> CreditConfig:
        """The section as it was given (its `estimator`/`weighting` may be the defaults, left unset)."""
        return cfg.__dict__[self.slot]


_CREDIT: Any = MethodCredit()  # Any: the field reads as a CreditConfig


@dataclass(frozen=True)
class EnvConfig:
    #: the environment id (`agentbench-af envs` lists them)
    id: str = "FrozenLake-4x4-v0"
    #: variant fields, e.g. {max_turns: 6}
    overrides: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelConfig:
    #: a tiny-family name (tiny-0.12m, tiny-0.2m, tiny-0.7m, tiny-2m, tiny-7m, tiny-30m) or a packaged
    #: pretrained model (smollm2-135m, models/packaged.py); ignored when `path` is set
    name: str = "tiny-0.2m"
    #: a Hugging Face model directory or id (GPU path), loaded offline
    path: str | None = None
    #: tiny tokenizer vocabulary (byte-level BPE trained on expert text)
    vocab_size: int = 512
    #: expert episodes whose text trains the tokenizer
    tokenizer_episodes: int = 300
    #: autocast of the SFT and RL forwards (weights keep the dtype they were built or loaded in); auto: bf16
    #: on GPU, fp32 on CPU; bfloat16 pays on a CPU only where it has native bf16 (docs/benchmarks.md)
    dtype: Literal["auto", "float32", "bfloat16"] = "auto"
    #: recompute each decoder layer in the backward pass instead of keeping its activations (transformers'
    #: activation checkpointing; less memory, about one more forward of time; the update's shared-prompt
    #: forward is kept: models/checkpointing.py, models/replay_cache.py)
    gradient_checkpointing: bool = False
    #: LoRA rank r (peft, models/lora.py): only adapters on the `lora_targets` modules train, every base
    #: weight stays frozen, in the warm start's SFT and in RL; 0: full fine-tuning. A warm start is saved
    #: with its adapters merged into the weights (a plain model), and RL puts fresh adapters on it
    lora_rank: int = 0
    #: LoRA's alpha: an adapter's update B A is scaled by lora_alpha / lora_rank
    lora_alpha: int = 16
    #: dropout on each adapter's input in the warm start's SFT only (RL's adapters use none: the policy's
    #: log-probs must be those of the weights it samples with)
    lora_dropout: float = 0.0
    #: names (last component) of the linear modules that get adapters; the default is a Llama decoder
    #: layer's attention and MLP projections (the tiny family and SmolLM2)
    lora_targets: tuple[str, ...] = LLAMA_TARGETS

    def __post_init__(self) -> None:
        check_choices(self, "model")
        _check_counts(self, "model", ("lora_alpha",), vocab_size=1, tokenizer_episodes=1, lora_rank=0,
                      lora_dropout=0)
        if not isinstance(self.lora_rank, int) or isinstance(self.lora_rank, bool):
            raise ValueError(f"model.lora_rank must be an integer (0: full fine-tuning), got {self.lora_rank!r}")
        if not self.lora_dropout < 1:
            raise ValueError(f"model.lora_dropout must lie in [0, 1), got {self.lora_dropout!r}")
        targets = self.lora_targets
        if (isinstance(targets, str) or not targets
                or not all(isinstance(t, str) and t and "." not in t for t in targets)):
            raise ValueError(f"model.lora_targets must be a non-empty list of module names without dots (e.g. "
                             f"{list(LLAMA_TARGETS)}), got {targets!r}")

    def lora_for(self, sft: bool) -> LoraSettings | None:
        """The LoRA settings of the warm start's SFT (`sft=True`, with `lora_dropout`) or of RL (no dropout);
        None when `lora_rank` is 0."""
        if self.lora_rank == 0:
            return None
        return LoraSettings(self.lora_rank, int(self.lora_alpha), float(self.lora_dropout) if sft else 0.0,
                            tuple(self.lora_targets))


@dataclass(frozen=True)
class SFTConfig:
    """Warm start on expert demonstrations; `steps` is the budget knob for a partial policy."""

    #: optimizer steps of the warm start (0: the untrained model)
    steps: int = 200
    #: demonstration sequences per step
    batch_size: int = 32
    #: peak learning rate
    lr: float = 1e-3
    #: steps of linear warm-up to `lr`
    warmup_steps: int = 10
    #: expert episodes from the training seed range
    episodes: int = 2000
    #: learning rate after warm-up: constant, or cosine decay to 0 at the last step (the final weights are
    #: then not one noisy step of a constant-rate walk)
    schedule: Literal["constant", "cosine"] = "constant"
    #: the warm start's seed (model init, demonstration seeds, batch order); None: the run's seed. A fixed
    #: value lets a sweep's seeds share one warm start, so they differ in RL and evaluation only
    seed: int | None = field(default=None, metadata=OMIT_WHEN_UNSET)
    #: gradient accumulation: at most this many demonstration rows per forward and backward of a step (one
    #: optimizer step on the mean over the whole batch's tokens); 0: the whole batch at once. Memory only,
    #: so neither in the config hash nor in the warm start's key
    micro_batch_rows: int = 0
    #: variant fields for the demonstration episodes only, over `env.overrides` (e.g. {relabel_ids: true} on
    #: WebShop: ids the policy must copy off the page); evaluation and RL play `env.overrides` alone. Unset: none
    env_overrides: dict[str, Any] | None = field(default=None, metadata=OMIT_WHEN_UNSET)
    #: expert episodes per drawn seed, the k-th played with `reset(options={"draw": k})`, for environments
    #: whose game differs by draw (`TextEnv.draws_vary`; WebShop with relabel_ids: a new id permutation each
    #: draw, so the id to click cannot be memorised per goal). Unset: 1
    demo_draws: int | None = field(default=None, metadata=OMIT_WHEN_UNSET)

    def __post_init__(self) -> None:
        check_choices(self, "sft")
        _check_counts(self, "sft", ("lr",), steps=0, batch_size=1, warmup_steps=0, episodes=1, micro_batch_rows=0)
        if self.demo_draws is not None and (isinstance(self.demo_draws, bool) or not isinstance(self.demo_draws, int)
                                            or self.demo_draws < 1):
            raise ConfigError(f"sft.demo_draws must be an int >= 1 (or unset), got {self.demo_draws!r}")


@dataclass(frozen=True)
class RLConfig:
    #: RL updates (each on one freshly collected batch)
    steps: int = 30
    #: seeds per step; each gets rollout.group_size rollouts
    prompts_per_step: int = 16
    #: the policy's peak learning rate
    lr: float = 1e-4
    #: the critic's learning rate (value head or separate critic)
    critic_lr: float = 1e-3
    #: steps of linear warm-up to the learning rates
    warmup_steps: int = 3
    #: passes over each step's batch
    epochs: int = 1
    #: optimizer steps per epoch
    minibatches: int = 1
    #: AdamW weight decay
    weight_decay: float = 0.0
    #: gae's critic. detached: a value head on the policy's last hidden state whose loss trains the head
    #: only (a linear critic on the policy's features); shared: the value loss also trains the policy's
    #: trunk; separate: its own copy of the warm start's trunk plus a head (train.update.critic), as verl does
    critic: Literal["detached", "shared", "separate"] = "detached"
    #: optimizer steps per minibatch. one: every generated token in one step. lopti (Lopti, arXiv 2505.12929):
    #: a step on the tokens whose old probability is below rl.lopti_threshold, then a fresh forward and a
    #: step on the rest; each token's policy, value, KL and entropy terms act in its own pass
    token_passes: Literal["one", "lopti"] = "one"
    #: Lopti's split: tokens with p_old < this go in the first pass (the paper's 0.5)
    lopti_threshold: float = 0.5
    #: gradient accumulation: at most this many rows per forward and backward of a minibatch (the
    #: micro-batches' losses add up to the minibatch's, then one optimizer step) and per scoring forward;
    #: 0: every row at once. Memory only (the step is the same up to float rounding), so not in the config
    #: hash; one process only, not with rl.token_passes=lopti nor a policy loss that takes batch statistics
    micro_batch_rows: int = 0

    def __post_init__(self) -> None:
        check_choices(self, "rl")
        _check_counts(self, "rl", ("lr", "critic_lr"), steps=0, prompts_per_step=1, warmup_steps=0, epochs=1,
                      minibatches=1, weight_decay=0, micro_batch_rows=0)
        if not (isinstance(self.lopti_threshold, (int, float)) and 0 < self.lopti_threshold < 1):
            raise ValueError(f"rl.lopti_threshold must lie in (0, 1), got {self.lopti_threshold!r}")
        if self.micro_batch_rows and self.token_passes == "lopti":
            raise ValueError("rl.micro_batch_rows does not split Lopti's two passes (rl.token_passes=lopti): set "
                             "rl.micro_batch_rows=0")


@dataclass(frozen=True)
class EvalConfig:
    #: the first `episodes` seeds of the environment's evaluation range
    episodes: int = 128
    #: sampling temperature of the evaluation; 0: greedy
    temperature: float = 0.0
    #: RL steps between evaluations (the curve); the final step is always evaluated
    every: int = 10
    #: also evaluate greedily (temperature 0) at step 0 and after the last update: the curve rows of those
    #: steps and the record's final_metrics get `greedy_success`, `greedy_valid_rate`, ... (measurement only:
    #: left out of the config hash; training draws the same random numbers either way)
    also_greedy: bool = False

    def __post_init__(self) -> None:
        _check_counts(self, "eval", episodes=1, temperature=0, every=1)


@dataclass(frozen=True)
class RunConfig:
    #: seeds everything of the run (and the warm start, unless sft.seed is set)
    seed: int = 0
    #: the folder that holds the run folders
    out_dir: str = "runs"
    #: run directory name; empty: <env>-<method>-<model>-s<seed>-<6 digits of the config hash>
    name: str = ""
    #: a warm-start policy directory to branch from (skips SFT)
    init_from: str | None = None
    #: RL steps between checkpoints (the last step is always checkpointed)
    checkpoint_every: int = 5
    #: 0: never; else save a rollout sample every N steps
    save_rollouts_every: int = 0
    #: groups per saved sample
    rollout_sample_groups: int = 8
    #: torch threads; 0: all cores
    threads: int = 0
    #: auto: cuda when available
    device: str = "auto"
    #: experiment trackers that also get each step's metrics (results/trackers.py); metrics.jsonl stays the
    #: source of the records. wandb runs offline (no network): `wandb sync` uploads later
    report_to: tuple[str, ...] = ()
    #: data parallelism under torchrun (WORLD_SIZE > 1; ignored for one process): ddp replicates the model
    #: on every rank, fsdp2 shards parameters, gradients and optimizer state (torch fully_shard)
    parallel: Literal["ddp", "fsdp2"] = "ddp"

    def __post_init__(self) -> None:
        check_choices(self, "run")
        _check_counts(self, "run", checkpoint_every=1, save_rollouts_every=0, rollout_sample_groups=1, threads=0)
        unknown = sorted(set(self.report_to) - set(REPORTERS))
        if unknown:
            raise ValueError(f"run.report_to: unknown tracker(s) {unknown}; choose from {list(REPORTERS)}")


@dataclass(frozen=True)
class DiagnosticConfig:
    """The reward-reactive headline measured on the run's first batch and after the last update
    (`diagnose.headline`); it reads the run and never changes training, so `config_hash` leaves it out."""

    #: groups with reward variance that get gradient measurements (2 G backward passes each)
    max_groups: int = 16
    #: within-group advantage shuffles behind the headline's null
    shuffles: int = 64
    #: bootstrap resamples of the groups behind its interval
    resamples: int = 1000
    #: confidence level of the bootstrap interval, in (0, 1)
    confidence: float = 0.95
    #: seed of the shuffles and the bootstrap
    seed: int = 0

    def __post_init__(self) -> None:
        _check_counts(self, "diagnostic", max_groups=1, shuffles=1, resamples=1)
        if not 0 < self.confidence < 1:
            raise ValueError(f"diagnostic.confidence must lie in (0, 1), got {self.confidence!r}")


@dataclass(frozen=True)
class TrainConfig:
    #: `base[+weighting]`: an estimator's method name (ppo, grpo, rloo, gigpo, or a plugin's) and optionally a
    #: token weighting (actfocus, actfocus-reasoning-only, action-only, top-entropy, ...); it sets
    #: credit.estimator and credit.weighting
    method: str = "grpo"
    #: the environment
    env: EnvConfig = field(default_factory=EnvConfig)
    #: the policy model
    model: ModelConfig = field(default_factory=ModelConfig)
    #: the warm start on expert demonstrations
    sft: SFTConfig = field(default_factory=SFTConfig)
    #: the RL updates
    rl: RLConfig = field(default_factory=RLConfig)
    #: how rollouts are sampled
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    #: credit assignment; `estimator` and `weighting` come from `method`
    credit: CreditConfig = _CREDIT
    #: the loss terms
    loss: LossConfig = field(default_factory=LossConfig)
    #: the evaluation (the curve and the final-step success)
    eval: EvalConfig = field(default_factory=EvalConfig)
    #: seed, folders, checkpoints, devices and trackers
    run: RunConfig = field(default_factory=RunConfig)
    #: the Action Bottleneck diagnostic recorded with the run
    diagnostic: DiagnosticConfig = field(default_factory=DiagnosticConfig)
    #: plugin modules imported before the config is built (and in sweep workers)
    imports: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        from agentbench_af.credit import credit_needs

        given = _CREDIT.given(self)
        defaults = CreditConfig()
        problem = method_conflict(self.method, {k: getattr(given, k) for k in ("estimator", "weighting")
                                                if getattr(given, k) != getattr(defaults, k)})  # a default may be unset
        if problem:
            raise ValueError(problem)
        if not self.rollout.temperature > 0:
            raise ValueError(f"rollout.temperature must be > 0 for RL rollouts (their log-probs train the policy), "
                             f"got {self.rollout.temperature!r}")
        if credit_needs(self.credit).groups and self.rollout.group_size < 2:
            raise ValueError(f"method {self.method}: rollout.group_size must be >= 2 for {self.credit.estimator} "
                             f"(it compares rollouts of one prompt; a group of 1 has advantage 0), got {self.rollout.group_size}")
        if self.rollout.dynamic_sampling and self.rollout.group_size < 2:
            raise ValueError(f"rollout.dynamic_sampling drops groups whose returns are all equal, which every group "
                             f"of one rollout is: set rollout.group_size >= 2 (got {self.rollout.group_size})")
        if self.model.lora_rank and self.rollout.engine != "transformers":
            raise ValueError(f"model.lora_rank > 0 needs rollout.engine=transformers (the {self.rollout.engine} engine "
                             f"is given plain weights, not LoRA-wrapped ones): set rollout.engine=transformers or "
                             f"model.lora_rank=0")
        if self.model.lora_rank and self.run.parallel == "fsdp2":
            raise ValueError("model.lora_rank > 0 is not supported with run.parallel=fsdp2 (its optimizer-state "
                             "layout counts every parameter): use run.parallel=ddp or model.lora_rank=0")
        samples = self.rl.prompts_per_step * self.rollout.group_size
        if self.rl.minibatches > samples:
            raise ValueError(f"rl.minibatches ({self.rl.minibatches}) must be <= rl.prompts_per_step x "
                             f"rollout.group_size ({samples} trajectories per step)")

    @property
    def needs_value_head(self) -> bool:
        """Whether the estimator declared it needs a critic (`Needs.critic`)."""
        from agentbench_af.credit import credit_needs

        return credit_needs(self.credit).critic

    @property
    def needs_reference_model(self) -> bool:
        """A frozen copy of the warm start: for the KL penalty, or a credit method that declared it."""
        from agentbench_af.credit import credit_needs

        return self.loss.kl_coef > 0 or credit_needs(self.credit).reference

    @property
    def warm_start_seed(self) -> int:
        """The seed of the warm start this config builds: `sft.seed`, else `run.seed`."""
        return self.run.seed if self.sft.seed is None else self.sft.seed

    @property
    def run_label(self) -> str:
        """`<env>-<method label>-<model>-s<seed>`: what a sweep names its runs (its grid keeps them apart)."""
        model = self.model.path.rstrip("/").split("/")[-1] if self.model.path else self.model.name
        return f"{self.env.id}-{self.method_label}-{model}-s{self.run.seed}"

    @property
    def method_label(self) -> str:
        """The method with its non-default update rule, e.g. `grpo@gspo` (see `credit.method_label`)."""
        from agentbench_af.credit.method_label import method_label

        return method_label(self.method, self.loss.policy, self.rl.token_passes, self.rollout.dynamic_sampling)

    @property
    def run_name(self) -> str:
        """`run.name`, else the label plus 6 digits of the config hash, so different configs get different folders."""
        from agentbench_af.config import config_hash

        return self.run.name or f"{self.run_label}-{config_hash(self)[:6]}"

def train_config_from_dict(data: dict[str, Any], imports: tuple[str, ...] | list[str] = ()) -> TrainConfig:
    """Import the plugins (`imports` given here, then the mapping's `imports:`), then build the config.

    A `credit.estimator` / `credit.weighting` written in the mapping that differs from what `method`
    sets is a ConfigError, even when it is the default (which `TrainConfig` alone cannot tell apart).
    """
    listed = data.get("imports") or []
    if not isinstance(listed, (list, tuple)):
        raise ConfigError(f"imports: expected a list of module names, got {listed!r}")
    names = tuple(dict.fromkeys([*imports, *listed]))
    try:
        import_modules(names)
    except PluginError as exc:
        raise ConfigError(str(exc)) from exc
    credit = data.get("credit")
    if isinstance(credit, dict) and isinstance(data.get("method", "grpo"), str):
        try:
            problem = method_conflict(data.get("method", "grpo"), credit)
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        if problem:
            raise ConfigError(problem)
    return from_dict(TrainConfig, {**data, "imports": list(names)} if names else data)


def demonstration_overrides(cfg: TrainConfig) -> dict[str, Any]:
    """The variant fields of the warm start's demonstration episodes: `env.overrides`, then `sft.env_overrides`."""
    return {**cfg.env.overrides, **(cfg.sft.env_overrides or {})}
