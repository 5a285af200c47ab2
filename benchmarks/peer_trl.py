"""Side by side with Hugging Face TRL's `GRPOTrainer`: one GRPO step on the same model (single- or multi-turn).

Both trainers load one model directory (a tiny policy warm-started by a short SFT on FrozenLake expert
demonstrations, written with `save_pretrained`; or, for `--model smollm2-135m`, the converted
SmolLM2-135M-Instruct folder as it is) and run the same step: the same P prompts (FrozenLake
seeds, one turn: `max_turns: 1` unless `--turns`) x G rollouts of at most N new tokens at temperature 1, then one AdamW
step (constant learning rate, gradient norm clipped to 1) over the P x G completions with the
token-mean clipped loss (eps 0.2) and group-std advantages; fp32, no reference model, no KL term. TRL
runs with bf16 off, gradient checkpointing as ours (off unless `--gradient-checkpointing`), `loss_type="dapo"` (token mean over the batch),
`scale_rewards="group"` and one iteration; its reward function steps the same environment with the
decoded completion (multi-turn: see `--turns` below). The prompt token ids of both are checked equal before anything is timed.

Our step is the training loop's: `collect_rollouts` (environment steps included), `trajectories_to_batch`
and `train.update.step.update` (the on-policy shortcut where `fuses_scoring` allows it; `--score-pass` forces
the separate scoring pass). TRL's step is timed from its trainer's `on_step_begin`
to `on_step_end` (generation, reward, forward, backward, clipping, optimizer step); its generation and
reward calls are timed by wrapping the trainer's methods. The steps alternate one by one inside one TRL
training run (our step runs in a `TrainerCallback`): ours, TRL, TRL, ours, ... so each adjacent pair ran
under the same machine load. After `--warmup` untimed steps each, `--pairs` rounds of `--steps` steps each.

    pip install -e ".[bench]"
    python benchmarks/peer_trl.py                    # 3 rounds x 9 steps each side, grpo
    python benchmarks/peer_trl.py --method grpo+actfocus --score-pass
    python benchmarks/peer_trl.py --json
    python benchmarks/peer_trl.py --model smollm2-135m --prompts 8 --group 8   # SmolLM2-135M-Instruct, no SFT

Both sides keep training from step to step (each its own copy), so response lengths may drift apart;
the table reports the mean completion length of each.

Memory: each phase of a step (ours: the collector, then scoring + update; TRL: generation, then the rest
of its step) starts a new peak-RSS window (Linux: `5` written to /proc/self/clear_refs resets VmHWM), and
its peak resident set is reported beside the resident set at the step's start. The process holds both
sides' models and optimizer states, so a peak counts the other side's resident memory too; the step's
own cost is peak minus start.

    python benchmarks/peer_trl.py --model smollm2-135m --prompts 8 --group 8 --no-trl --warmup 0 --pairs 1 --steps 1
    python benchmarks/peer_trl.py --model smollm2-135m --no-trl --turns 3 --gradient-checkpointing ...

`--no-trl` runs our steps alone (warmup + pairs x steps of them); with it, `--bf16` runs ours with the update under
bf16 autocast and rollouts from a bf16 copy (`model.dtype=bfloat16`, `rollout.sampler_dtype=bfloat16`):

    python benchmarks/peer_trl.py --model smollm2-135m --prompts 8 --group 8 --no-trl --bf16 --warmup 0 --pairs 1 --steps 2

`--gradient-checkpointing` sets
`model.gradient_checkpointing` on our side and TRL's `gradient_checkpointing` on its side (without it
neither side checkpoints).

`--turns N` (N > 1) lets each episode run up to N turns, full context. TRL's side then runs its episodes in
a `rollout_func` (`trl_multiturn.run_episodes`): per turn one call of TRL's plain `model.generate` path
(`_generate_single_turn`, as TRL's own tool loop calls it), the decoded reply steps the environment, a cut
reply is closed with the end-of-turn id and the next user turn is appended as template ids; `env_mask`
keeps those inserted ids out of TRL's loss, and the reward is the episode's summed reward. Before timing,
scripted episodes must give the same token ids, loss positions and returns through TRL's side as through
our collector (`trl_multiturn.compare_with_collector`). TRL's generation time is then the whole
`rollout_func` (environment steps included, as ours). Left out: GPU runs.
"""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
import torch
import typer
from tabulate import tabulate

import agentbench_af
from agentbench_af.formats.prompts import turn_message
from agentbench_af.models.packaged import PACKAGED_MODELS, packaged_model_dir
from agentbench_af.results.record import git_commit
from agentbench_af.rollout.collect import collect_rollouts
from agentbench_af.rollout.engine import SAMPLER_DTYPES, TransformersEngine
from agentbench_af.rollout.seeds import draw_train_seeds
from agentbench_af.rollout.to_batch import trajectories_to_batch
from agentbench_af.train.config import EnvConfig, ModelConfig, RLConfig, TrainConfig
from agentbench_af.train.update.learner import build_learner
from agentbench_af.train.update.step import StepContext, samples_on_policy, update

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rollout_throughput import warm_policy  # noqa: E402
from trl_multiturn import compare_with_collector, run_episodes  # noqa: E402

CPU = torch.device("cpu")


def _status_mb(key: str) -> float:
    """A memory line of /proc/self/status (VmRSS, VmHWM) in MiB; nan where there is no procfs."""
    try:
        found = re.search(rf"^{key}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)
    except OSError:
        return float("nan")
    return int(found.group(1)) / 1024 if found else float("nan")


def rss_mb() -> float:
    return _status_mb("VmRSS")


def new_peak_window() -> None:
    """Reset the process's peak resident set (VmHWM) to its current one (Linux >= 4.0)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def peak_mb() -> float:
    """The peak resident set since the last `new_peak_window`, in MiB."""
    return _status_mb("VmHWM")


@dataclass
class StepTime:
    seconds: float
    generation_s: float  # ours: the collector with its environment steps; TRL: `_generate_single_turn`, or the
    # multi-turn `rollout_func` (environment steps included)
    reward_s: float  # TRL: `_calculate_rewards`; ours: inside generation_s
    generated_tokens: int
    rss_start_mb: float = float("nan")  # resident set when the step began
    peak_generation_mb: float = float("nan")  # peak resident set during generation
    peak_update_mb: float = float("nan")  # peak during the rest of the step (scoring, credit, update)

    @property
    def update_s(self) -> float:
        """Scoring, credit and the update (what is left of the step)."""
        return self.seconds - self.generation_s - self.reward_s


@dataclass
class Side:
    name: str
    warmup: list[StepTime] = field(default_factory=list)
    timed: list[StepTime] = field(default_factory=list)

    def add(self, step: StepTime, warm: bool) -> None:
        (self.warmup if warm else self.timed).append(step)

    def median(self, key: str) -> float:
        return statistics.median(getattr(s, key) for s in self.timed)


def step_config(env_id: str, model: str, method: str, prompts: int, group: int, max_new_tokens: int,
                lr: float, turns: int = 1, gradient_checkpointing: bool = False, bf16: bool = False) -> TrainConfig:
    """The loop's config for one step of episodes of at most `turns` turns (constant learning rate, no warm-up);
    `bf16`: the update under bf16 autocast and a bf16 sampling copy (model.dtype, rollout.sampler_dtype)."""
    from agentbench_af.rollout.types import RolloutConfig

    model_cfg = ModelConfig(name=model, gradient_checkpointing=gradient_checkpointing,
                            dtype="bfloat16" if bf16 else "auto")
    return TrainConfig(method=method, env=EnvConfig(id=env_id, overrides={"max_turns": turns}),
                       model=model_cfg, rl=RLConfig(prompts_per_step=prompts, lr=lr, warmup_steps=0),
                       rollout=RolloutConfig(group_size=group, max_new_tokens=max_new_tokens,
                                             sampler_dtype="bfloat16" if bf16 else "float32"))


def prompt_rows(cfg: TrainConfig) -> tuple[list[int], list[dict]]:
    """The step's seeds and TRL dataset rows: the system prompt and first user message of each seed."""
    env = agentbench_af.make(cfg.env.id, **cfg.env.overrides)
    seeds = draw_train_seeds(env, cfg.rl.prompts_per_step, np.random.default_rng(0))
    rows = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        message = turn_message(obs, 1, env.actions_left, env.variant.max_actions_per_turn)
        rows.append({"prompt": [{"role": "system", "content": env.system_prompt()}, {"role": "user", "content": message}],
                     "seed": seed})
    return seeds, rows


class OurStep:
    """The loop's step on its own copy of the model: collect -> batch -> score/credit/update."""

    def __init__(self, model_dir: Path, cfg: TrainConfig, seeds: list[int], score_pass: bool) -> None:
        self.cfg, self.seeds = cfg, seeds
        self.learner = build_learner(cfg, model_dir, CPU)
        self.policy = self.learner.policy
        self.engine = TransformersEngine(self.policy.lm, self.policy.pad_token_id, cfg.rollout.max_batch_size,
                                         sample_dtype=SAMPLER_DTYPES[cfg.rollout.sampler_dtype])
        self.autocast = torch.bfloat16 if cfg.model.dtype == "bfloat16" else None  # on the CPU, as use_device
        # a constant learning rate (the learner's schedule would warm it up)
        self.learner.optimizer = torch.optim.AdamW(self.policy.lm.parameters(), lr=cfg.rl.lr,
                                                   weight_decay=cfg.rl.weight_decay)
        self.on_policy = not score_pass and samples_on_policy(self.engine, self.learner)
        self.count = 0

    def prompt_ids(self) -> list[list[int]]:
        return [list(self.policy.chat.prefix_ids(r["prompt"][0]["content"], r["prompt"][1]["content"],
                                                 self.cfg.rollout.prompt_prefix)) for r in prompt_rows(self.cfg)[1]]

    def __call__(self) -> StepTime:
        cfg = self.cfg
        start = rss_mb()
        new_peak_window()
        t0 = time.perf_counter()
        trajs = collect_rollouts(self.engine, self.policy.tokenizer, self.policy.chat, cfg.env.id, self.seeds,
                                 cfg.rollout, cfg.env.overrides)
        t_gen = time.perf_counter() - t0
        peak_gen = peak_mb()
        new_peak_window()
        batch = trajectories_to_batch(trajs, cfg.rollout.context_mode, self.policy.pad_token_id)
        self.count += 1
        update(self.learner, batch, cfg, StepContext(torch.Generator().manual_seed(self.count), CPU, self.autocast,
                                                     on_policy=self.on_policy))
        return StepTime(time.perf_counter() - t0, t_gen, 0.0, sum(t.num_generated_tokens for t in trajs), start,
                        peak_gen, peak_mb())


def seed_lookup(rows: list[dict]):
    """A prompt's seed from its first user message (a `rollout_func` gets the prompts without their rows)."""
    seeds: dict[str, int] = {}
    for row in rows:
        message = row["prompt"][1]["content"]
        if seeds.setdefault(message, row["seed"]) != row["seed"]:
            raise ValueError(f"seeds {seeds[message]} and {row['seed']} start with the same user message")
    return lambda prompt: seeds[prompt[1]["content"]]


def turns_of(cfg: TrainConfig) -> int:
    return int(cfg.env.overrides.get("max_turns", 1))


def trl_trainer(model_dir: Path, cfg: TrainConfig, rows: list[dict], total_steps: int, out_dir: str, callback,
                micro_batches: int = 1):
    """TRL's GRPOTrainer with our step's settings (gradient checkpointing as ours: `model.gradient_checkpointing`).
    One turn: its reward steps the environment with each completion. Several: a `rollout_func` runs the
    episodes (`trl_multiturn.run_episodes`, TRL's `_generate_single_turn` per turn) and its reward is theirs.
    `micro_batches` K > 1: one generation of all P x G rollouts, then K forward/backward passes of P x G / K rows
    accumulated into one optimizer step (`gradient_accumulation_steps` = `steps_per_generation` = K; its "dapo"
    loss still divides by the whole batch's token count)."""
    from datasets import Dataset
    from transformers import AutoTokenizer, PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    env_id, overrides = cfg.env.id, dict(cfg.env.overrides)
    seed_of = seed_lookup(rows)

    def env_reward(prompts, completions, seed, **_) -> list[float]:
        rewards = []
        for completion, s in zip(completions, seed, strict=True):
            env = agentbench_af.make(env_id, **overrides)
            env.reset(seed=int(s))
            rewards.append(float(env.step(completion[0]["content"])[1]))
        return rewards

    def episode_reward(prompts, completions, episode_return, **_) -> list[float]:
        return [float(r) for r in episode_return]

    def multi_turn_rollout(prompts: list, trainer) -> dict:
        """TRL's `rollout_func`: the prompts arrive repeated `num_generations` times (its RepeatSampler)."""
        if len(prompts) != cfg.rl.prompts_per_step * cfg.rollout.group_size:
            raise RuntimeError(f"rollout_func got {len(prompts)} prompts, not prompts x group")
        prompt_ids = [list(map(int, ids)) for ids in trainer._tokenize_prompts(prompts)[0]]
        episodes = run_episodes(lambda contexts: trainer._generate_single_turn(contexts, None, {}, 1)[0],
                                trainer.processing_class, prompt_ids, [seed_of(p) for p in prompts], env_id, overrides,
                                list(trainer.eos_token_ids))
        return {"prompt_ids": episodes.prompt_ids, "completion_ids": episodes.completion_ids, "logprobs": None,
                "env_mask": episodes.env_mask, "episode_return": episodes.rewards}

    multi_turn = turns_of(cfg) > 1

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenizer.padding_side = "left"
    batch = cfg.rl.prompts_per_step * cfg.rollout.group_size
    if micro_batches < 1 or batch % micro_batches:
        raise ValueError(f"--trl-micro-batches {micro_batches} does not divide the batch of {batch} rollouts")
    args = GRPOConfig(
        output_dir=out_dir, report_to="none", use_cpu=True, bf16=False,
        gradient_checkpointing=cfg.model.gradient_checkpointing,
        model_init_kwargs={"dtype": torch.float32}, per_device_train_batch_size=batch // micro_batches,
        gradient_accumulation_steps=micro_batches, steps_per_generation=micro_batches,
        num_generations=cfg.rollout.group_size, max_completion_length=cfg.rollout.max_new_tokens,
        temperature=cfg.rollout.temperature, top_p=cfg.rollout.top_p, learning_rate=cfg.rl.lr,
        lr_scheduler_type="constant", weight_decay=cfg.rl.weight_decay, max_grad_norm=cfg.loss.max_grad_norm,
        epsilon=cfg.loss.clip_eps_low, epsilon_high=cfg.loss.clip_eps_high, loss_type="dapo", scale_rewards="group",
        beta=0.0, num_iterations=1, max_steps=total_steps, logging_steps=10**6, save_strategy="no", seed=0,
        disable_tqdm=True,
    )
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func's warning
    trainer = GRPOTrainer(model=str(model_dir), reward_funcs=episode_reward if multi_turn else env_reward, args=args,
                          train_dataset=Dataset.from_list(rows), processing_class=tokenizer, callbacks=[callback],
                          rollout_func=multi_turn_rollout if multi_turn else None)
    trainer.remove_callback(PrinterCallback)  # it prints the run's summary dict on stdout (breaks --json)
    if trainer.model.dtype != torch.float32:
        raise RuntimeError("TRL's model does not run in fp32; the comparison needs it")
    return trainer


def check_trl_checkpointing(model, wanted: bool) -> None:
    """TRL's model checkpoints its layers exactly when ours does (the Trainer turns it on in `train()`)."""
    checkpointing = getattr(model, "is_activation_checkpointing", None)
    if checkpointing is None:  # transformers < 5.24
        checkpointing = getattr(model, "is_gradient_checkpointing", False)
    if bool(checkpointing) != wanted:
        raise RuntimeError(f"TRL's model runs with gradient checkpointing {bool(checkpointing)}, ours with {wanted}")


def check_multi_turn_layout(trainer, our_step: OurStep, seeds: list[int], rows: list[dict]) -> None:
    """Before timing: scripted episodes (two replies ending with the stop id, one cut by the token limit)
    give the same ids, loss positions and returns through TRL's side as through our collector."""
    chat = our_step.policy.chat
    eot = list(chat.end_of_turn_ids)
    replies = [chat.response_ids("<think> right, then down </think> <answer> Right || Down </answer>") + eot,
               chat.response_ids("<answer> Down </answer>") + eot, chat.response_ids("<think> the hole is")]
    group = our_step.cfg.rollout.group_size
    prompt_ids = [list(map(int, ids)) for ids in trainer._tokenize_prompts([r["prompt"] for r in rows])[0]]
    episodes = compare_with_collector(trainer.processing_class, chat, [p for p in prompt_ids for _ in range(group)],
                                      seeds, group, our_step.cfg.env.id, dict(our_step.cfg.env.overrides), replies)
    if max(episodes.turns) < 2:
        raise RuntimeError("the scripted episodes never reached a second turn; the layout check tested nothing")


def run(model_dir: Path, cfg: TrainConfig, warmup: int, pairs: int, steps: int, score_pass: bool, micro_batches: int = 1):
    from transformers import TrainerCallback

    seeds, rows = prompt_rows(cfg)
    ours, trl_side = Side("agentbench-af"), Side("TRL")
    our_step = OurStep(model_dir, cfg, seeds, score_pass)
    total = warmup + pairs * steps
    timing: dict[str, float] = {"gen": 0.0, "reward": 0.0, "tokens": 0}

    class Alternate(TrainerCallback):
        """Our step before TRL's on even steps, after it on odd ones (ours, TRL, TRL, ours, ...)."""

        def __init__(self) -> None:
            self.index, self.t0 = 0, 0.0

        def _ours(self) -> None:
            ours.add(our_step(), warm=self.index < warmup)

        def on_step_begin(self, args, state, control, **kwargs):
            if self.index == 0:
                check_trl_checkpointing(kwargs["model"], cfg.model.gradient_checkpointing)
            if self.index % 2 == 0:
                self._ours()
            timing.update(gen=0.0, reward=0.0, tokens=0, start_mb=rss_mb(), gen_mb=0.0, rest_mb=0.0)
            new_peak_window()
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            seconds = time.perf_counter() - self.t0
            rest = max(timing["rest_mb"], peak_mb())
            trl_side.add(StepTime(seconds, timing["gen"], timing["reward"], timing["tokens"], timing["start_mb"],
                                  timing["gen_mb"], rest), warm=self.index < warmup)
            if self.index % 2 == 1:
                self._ours()
            self.index += 1

    with tempfile.TemporaryDirectory() as tmp:
        trainer = trl_trainer(model_dir, cfg, rows, total, tmp, Alternate(), micro_batches)
        trl_ids = trainer._tokenize_prompts([r["prompt"] for r in rows])[0]
        if [list(map(int, ids)) for ids in trl_ids] != our_step.prompt_ids():
            raise RuntimeError("TRL's prompt token ids differ from ours; the two steps would not be comparable")
        if list(trainer.eos_token_ids) != list(our_step.policy.chat.end_of_turn_ids):
            raise RuntimeError(f"stop ids differ: TRL {trainer.eos_token_ids}, ours {our_step.policy.chat.end_of_turn_ids}")
        multi_turn = turns_of(cfg) > 1
        if multi_turn:
            check_multi_turn_layout(trainer, our_step, seeds, rows)
        rewards = trainer._calculate_rewards
        # what is timed as generation: one turn, TRL's `_generate_single_turn`; several, the whole
        # `rollout_func` (generation and environment steps, as our collector is timed)
        generate = trainer.rollout_func if multi_turn else trainer._generate_single_turn

        def generated(out) -> int:
            return sum(sum(m) for m in out["env_mask"]) if multi_turn else sum(len(c) for c in out[0])

        def timed_generate(*args, **kwargs):
            timing["rest_mb"] = max(timing["rest_mb"], peak_mb())
            new_peak_window()
            t0 = time.perf_counter()
            out = generate(*args, **kwargs)
            timing["gen"] += time.perf_counter() - t0
            timing["gen_mb"] = max(timing["gen_mb"], peak_mb())
            new_peak_window()
            timing["tokens"] += generated(out)
            return out

        def timed_rewards(*args, **kwargs):
            t0 = time.perf_counter()
            out = rewards(*args, **kwargs)
            timing["reward"] += time.perf_counter() - t0
            return out

        if multi_turn:
            trainer.rollout_func = timed_generate
        else:
            trainer._generate_single_turn = timed_generate
        trainer._calculate_rewards = timed_rewards
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trainer.train()
    return ours, trl_side, our_step.on_policy, len(trl_ids[0]) if trl_ids else 0


def run_ours(model_dir: Path, cfg: TrainConfig, warmup: int, steps: int, score_pass: bool):
    """Our steps alone (no TRL trainer in the process): `warmup` untimed, then `steps` timed."""
    seeds, _ = prompt_rows(cfg)
    ours = Side("agentbench-af")
    our_step = OurStep(model_dir, cfg, seeds, score_pass)
    for index in range(warmup + steps):
        ours.add(our_step(), warm=index < warmup)
    return ours, None, our_step.on_policy, 0


def versions() -> dict[str, str]:
    """The installed version of each package the step uses ("not installed" for one that is absent: `trl`
    and `datasets` under `--no-trl`)."""
    names = ("agentbench-af", "torch", "transformers", "trl", "accelerate", "datasets")
    return {"python": platform.python_version(), **{n: _version(n) for n in names}}


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def main(
    env_id: str = typer.Option("FrozenLake-4x4-v0", "--env"),
    model: str = typer.Option("tiny-0.2m"),
    method: str = typer.Option("grpo", help="Our method (TRL always runs GRPO); grpo+actfocus adds the weights."),
    sft_steps: int = typer.Option(60, help="SFT steps of the warm start (a short one is enough for timing)."),
    prompts: int = typer.Option(16),
    group: int = typer.Option(8),
    max_new_tokens: int = typer.Option(48),
    lr: float = typer.Option(1e-4),
    warmup: int = typer.Option(1, help="Untimed steps per side before the timed ones."),
    pairs: int = typer.Option(3, help="Rounds of alternated steps."),
    steps: int = typer.Option(9, help="Timed steps per side in each round."),
    score_pass: bool = typer.Option(False, "--score-pass", help="Ours: force the separate scoring pass."),
    threads: int = typer.Option(1, help="torch threads (both sides run in this process)."),
    with_trl: bool = typer.Option(True, "--trl/--no-trl", help="--no-trl: our steps alone."),
    turns: int = typer.Option(1, help="Turns per episode at most (> 1: multi-turn, full context)."),
    gradient_checkpointing: bool = typer.Option(False, "--gradient-checkpointing", help="Ours: model.gradient_checkpointing."),
    trl_micro_batches: int = typer.Option(1, help="TRL: split its update into K accumulated micro-batches (memory)."),
    bf16: bool = typer.Option(False, "--bf16", help="Ours: update under bf16 autocast, rollouts from a bf16 copy "
                              "(model.dtype, rollout.sampler_dtype); needs --no-trl (TRL's side is fp32)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    if turns < 1:
        raise typer.BadParameter("--turns must be >= 1")
    if bf16 and with_trl:
        raise typer.BadParameter("--bf16 needs --no-trl: TRL's side runs in fp32, so the pair would not be like for like")
    torch.set_num_threads(threads)
    torch.manual_seed(0)  # the same rollouts from the same code and model (TRL reseeds with its own seed 0)
    load_start = os.getloadavg()
    cfg = step_config(env_id, model, method, prompts, group, max_new_tokens, lr, turns, gradient_checkpointing, bf16)

    def measure(model_dir: Path):
        if with_trl:
            return run(model_dir, cfg, warmup, pairs, steps, score_pass, trl_micro_batches)
        return run_ours(model_dir, cfg, warmup, pairs * steps, score_pass)

    if model in PACKAGED_MODELS:  # a pretrained instruct model (smollm2-135m): its converted folder, no SFT
        ours, trl_side, shortcut, _ = measure(packaged_model_dir(model))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            policy = warm_policy(env_id, model, sft_steps)
            model_dir = policy.save(Path(tmp) / "warm")
            del policy
            ours, trl_side, shortcut, _ = measure(model_dir)
    sides = [ours] if trl_side is None else [ours, trl_side]
    keys = ("seconds", "generation_s", "reward_s", "update_s", "generated_tokens", "rss_start_mb", "peak_generation_mb",
            "peak_update_mb")
    n = len(ours.timed)
    summary = {
        "env": env_id, "turns": turns, "model": model, "method": method, "prompts": prompts, "group": group,
        "max_new_tokens": max_new_tokens, "threads": threads, "gradient_checkpointing": gradient_checkpointing,
        "trl_micro_batches": trl_micro_batches, "bf16": bf16,
        "shortcut": shortcut, "timed_steps": n,
        "commit": git_commit(), "versions": versions(), "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(), "load_average_start": load_start, "load_average": os.getloadavg(),
        "median": {side.name: {k: side.median(k) for k in keys} for side in sides},
        "steps": {side.name: [asdict(s) for s in side.timed] for side in sides},
    }
    pair_ratios: list[float] = []
    rounds: list[float] = []
    if trl_side is not None:
        pair_ratios = [t.seconds / o.seconds for o, t in zip(ours.timed, trl_side.timed, strict=True)]
        rounds = [statistics.median(pair_ratios[r * steps:(r + 1) * steps]) for r in range(pairs)]
        summary["trl_over_ours"] = {"medians": trl_side.median("seconds") / ours.median("seconds"),
                                    "pairs_median": statistics.median(pair_ratios), "rounds": rounds}
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    prompts_total = prompts * group
    rows = []
    for side in sides:
        gen, tokens = side.median("generation_s"), side.median("generated_tokens")
        rows.append([side.name, f"{side.median('seconds'):.3f}", f"{gen:.3f}", f"{tokens / gen:,.0f}",
                     f"{side.median('reward_s'):.3f}", f"{side.median('update_s'):.3f}",
                     f"{tokens / prompts_total:.1f}", f"{side.median('rss_start_mb'):,.0f}",
                     f"{side.median('peak_generation_mb'):,.0f}", f"{side.median('peak_update_mb'):,.0f}"])
    typer.echo(f"{env_id} {turns} turn(s) at most, {model}, {prompts} prompts x {group} rollouts, {max_new_tokens} new "
               f"tokens, {'bf16 (ours)' if bf16 else 'fp32'}, torch threads {threads}; ours: {method}, "
               f"{'on-policy shortcut' if shortcut else 'scoring pass'}"
               f"{', gradient checkpointing' if gradient_checkpointing else ''}; {n} timed steps each (medians), "
               f"load average {load_start[0]:.1f} at the start, {summary['load_average'][0]:.1f} at the end")
    typer.echo(tabulate(rows, headers=["one GRPO step", "s / step", "generation s", "gen tokens/s", "reward s",
                                       "scoring + update s", "mean completion", "RSS at start MiB",
                                       "peak gen MiB", "peak update MiB"]))
    if trl_side is not None:
        ratio = summary["trl_over_ours"]
        typer.echo(f"TRL / ours: {ratio['medians']:.3f} (medians), {ratio['pairs_median']:.3f} (median of {n} "
                   f"adjacent pairs), rounds {', '.join(f'{r:.3f}' for r in rounds)}")
    typer.echo(f"commit {summary['commit']}; " + ", ".join(f"{k} {v}" for k, v in summary["versions"].items()))


if __name__ == "__main__":
    typer.run(main)
