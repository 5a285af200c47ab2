"""Side by side with Hugging Face TRL's `GRPOTrainer`: one single-turn GRPO step on the same model.

Both trainers load one model directory (a tiny policy warm-started by a short SFT on FrozenLake expert
demonstrations, written with `save_pretrained`; or, for `--model smollm2-135m`, the converted
SmolLM2-135M-Instruct folder as it is) and run the same step: the same P prompts (FrozenLake
seeds, one turn: `max_turns: 1`) x G rollouts of at most N new tokens at temperature 1, then one AdamW
step (constant learning rate, gradient norm clipped to 1) over the P x G completions with the
token-mean clipped loss (eps 0.2) and group-std advantages; fp32, no reference model, no KL term. TRL
runs with gradient checkpointing and bf16 off, `loss_type="dapo"` (token mean over the batch),
`scale_rewards="group"` and one iteration; its reward function steps the same environment with the
decoded completion. The prompt token ids of both are checked equal before anything is timed.

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
the table reports the mean completion length of each. Left out: a multi-turn comparison (see
docs/benchmarks.md for why) and GPU runs.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, field
from importlib.metadata import version
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
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.rollout.seeds import draw_train_seeds
from agentbench_af.rollout.to_batch import trajectories_to_batch
from agentbench_af.train.config import EnvConfig, ModelConfig, RLConfig, TrainConfig
from agentbench_af.train.update.learner import build_learner
from agentbench_af.train.update.step import StepContext, samples_on_policy, update

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rollout_throughput import warm_policy  # noqa: E402

CPU = torch.device("cpu")


@dataclass
class StepTime:
    seconds: float
    generation_s: float  # ours: the collector with its environment steps; TRL: `_generate_single_turn`
    reward_s: float  # TRL: `_calculate_rewards`; ours: inside generation_s
    generated_tokens: int

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
                lr: float) -> TrainConfig:
    """The loop's config for one single-turn step (constant learning rate, no warm-up)."""
    from agentbench_af.rollout.types import RolloutConfig

    return TrainConfig(method=method, env=EnvConfig(id=env_id, overrides={"max_turns": 1}),
                       model=ModelConfig(name=model), rl=RLConfig(prompts_per_step=prompts, lr=lr, warmup_steps=0),
                       rollout=RolloutConfig(group_size=group, max_new_tokens=max_new_tokens))


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
        self.engine = TransformersEngine(self.policy.lm, self.policy.pad_token_id, cfg.rollout.max_batch_size)
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
        t0 = time.perf_counter()
        trajs = collect_rollouts(self.engine, self.policy.tokenizer, self.policy.chat, cfg.env.id, self.seeds,
                                 cfg.rollout, cfg.env.overrides)
        t_gen = time.perf_counter() - t0
        batch = trajectories_to_batch(trajs, cfg.rollout.context_mode, self.policy.pad_token_id)
        self.count += 1
        update(self.learner, batch, cfg, StepContext(torch.Generator().manual_seed(self.count), CPU,
                                                     on_policy=self.on_policy))
        return StepTime(time.perf_counter() - t0, t_gen, 0.0, sum(t.num_generated_tokens for t in trajs))


def trl_trainer(model_dir: Path, cfg: TrainConfig, rows: list[dict], total_steps: int, out_dir: str, callback):
    """TRL's GRPOTrainer with our step's settings; its reward steps the environment with each completion."""
    from datasets import Dataset
    from transformers import AutoTokenizer, PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    env_id, overrides = cfg.env.id, dict(cfg.env.overrides)

    def env_reward(prompts, completions, seed, **_) -> list[float]:
        rewards = []
        for completion, s in zip(completions, seed, strict=True):
            env = agentbench_af.make(env_id, **overrides)
            env.reset(seed=int(s))
            rewards.append(float(env.step(completion[0]["content"])[1]))
        return rewards

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenizer.padding_side = "left"
    batch = cfg.rl.prompts_per_step * cfg.rollout.group_size
    args = GRPOConfig(
        output_dir=out_dir, report_to="none", use_cpu=True, bf16=False, gradient_checkpointing=False,
        model_init_kwargs={"dtype": torch.float32}, per_device_train_batch_size=batch,
        num_generations=cfg.rollout.group_size, max_completion_length=cfg.rollout.max_new_tokens,
        temperature=cfg.rollout.temperature, top_p=cfg.rollout.top_p, learning_rate=cfg.rl.lr,
        lr_scheduler_type="constant", weight_decay=cfg.rl.weight_decay, max_grad_norm=cfg.loss.max_grad_norm,
        epsilon=cfg.loss.clip_eps_low, epsilon_high=cfg.loss.clip_eps_high, loss_type="dapo", scale_rewards="group",
        beta=0.0, num_iterations=1, max_steps=total_steps, logging_steps=10**6, save_strategy="no", seed=0,
        disable_tqdm=True,
    )
    trainer = GRPOTrainer(model=str(model_dir), reward_funcs=env_reward, args=args,
                          train_dataset=Dataset.from_list(rows), processing_class=tokenizer, callbacks=[callback])
    trainer.remove_callback(PrinterCallback)  # it prints the run's summary dict on stdout (breaks --json)
    checkpointing = getattr(trainer.model, "is_activation_checkpointing", None)
    if checkpointing is None:  # transformers < 5.24
        checkpointing = getattr(trainer.model, "is_gradient_checkpointing", False)
    if checkpointing or trainer.model.dtype != torch.float32:
        raise RuntimeError("TRL's model runs with gradient checkpointing or not in fp32; the comparison needs neither")
    return trainer


def run(model_dir: Path, cfg: TrainConfig, warmup: int, pairs: int, steps: int, score_pass: bool):
    from transformers import TrainerCallback

    seeds, rows = prompt_rows(cfg)
    ours, trl_side = Side("agentbench-af"), Side("TRL")
    our_step = OurStep(model_dir, cfg, seeds, score_pass)
    total = warmup + pairs * steps
    timing = {"gen": 0.0, "reward": 0.0, "tokens": 0}

    class Alternate(TrainerCallback):
        """Our step before TRL's on even steps, after it on odd ones (ours, TRL, TRL, ours, ...)."""

        def __init__(self) -> None:
            self.index, self.t0 = 0, 0.0

        def _ours(self) -> None:
            ours.add(our_step(), warm=self.index < warmup)

        def on_step_begin(self, args, state, control, **kwargs):
            if self.index % 2 == 0:
                self._ours()
            timing.update(gen=0.0, reward=0.0, tokens=0)
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            seconds = time.perf_counter() - self.t0
            trl_side.add(StepTime(seconds, timing["gen"], timing["reward"], timing["tokens"]), warm=self.index < warmup)
            if self.index % 2 == 1:
                self._ours()
            self.index += 1

    with tempfile.TemporaryDirectory() as tmp:
        trainer = trl_trainer(model_dir, cfg, rows, total, tmp, Alternate())
        trl_ids = trainer._tokenize_prompts([r["prompt"] for r in rows])[0]
        if [list(map(int, ids)) for ids in trl_ids] != our_step.prompt_ids():
            raise RuntimeError("TRL's prompt token ids differ from ours; the two steps would not be comparable")
        if list(trainer.eos_token_ids) != list(our_step.policy.chat.end_of_turn_ids):
            raise RuntimeError(f"stop ids differ: TRL {trainer.eos_token_ids}, ours {our_step.policy.chat.end_of_turn_ids}")
        generate, rewards = trainer._generate_single_turn, trainer._calculate_rewards

        def timed_generate(*args, **kwargs):
            t0 = time.perf_counter()
            completion_ids, logprobs = generate(*args, **kwargs)
            timing["gen"] += time.perf_counter() - t0
            timing["tokens"] += sum(len(c) for c in completion_ids)
            return completion_ids, logprobs

        def timed_rewards(*args, **kwargs):
            t0 = time.perf_counter()
            out = rewards(*args, **kwargs)
            timing["reward"] += time.perf_counter() - t0
            return out

        trainer._generate_single_turn, trainer._calculate_rewards = timed_generate, timed_rewards
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trainer.train()
    return ours, trl_side, our_step.shortcut, len(trl_ids[0]) if trl_ids else 0


def versions() -> dict[str, str]:
    names = ("agentbench-af", "torch", "transformers", "trl", "accelerate", "datasets")
    return {"python": platform.python_version(), **{n: version(n) for n in names}}


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
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    torch.set_num_threads(threads)
    cfg = step_config(env_id, model, method, prompts, group, max_new_tokens, lr)
    if model in PACKAGED_MODELS:  # a pretrained instruct model (smollm2-135m): its converted folder, no SFT
        ours, trl_side, shortcut, _ = run(packaged_model_dir(model), cfg, warmup, pairs, steps, score_pass)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            policy = warm_policy(env_id, model, sft_steps)
            model_dir = policy.save(Path(tmp) / "warm")
            del policy
            ours, trl_side, shortcut, _ = run(model_dir, cfg, warmup, pairs, steps, score_pass)
    n = len(ours.timed)
    pair_ratios = [t.seconds / o.seconds for o, t in zip(ours.timed, trl_side.timed, strict=True)]
    rounds = [statistics.median(pair_ratios[r * steps:(r + 1) * steps]) for r in range(pairs)]
    summary = {
        "env": env_id, "model": model, "method": method, "prompts": prompts, "group": group,
        "max_new_tokens": max_new_tokens, "threads": threads, "shortcut": shortcut, "timed_steps": n,
        "commit": git_commit(), "versions": versions(), "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(), "load_average": os.getloadavg(),
        "median": {side.name: {k: side.median(k) for k in ("seconds", "generation_s", "reward_s", "update_s",
                                                             "generated_tokens")} for side in (ours, trl_side)},
        "trl_over_ours": {"medians": trl_side.median("seconds") / ours.median("seconds"),
                          "pairs_median": statistics.median(pair_ratios), "rounds": rounds},
        "steps": {side.name: [asdict(s) for s in side.timed] for side in (ours, trl_side)},
    }
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    prompts_total = prompts * group
    rows = []
    for side in (ours, trl_side):
        gen, tokens = side.median("generation_s"), side.median("generated_tokens")
        rows.append([side.name, f"{side.median('seconds'):.3f}", f"{gen:.3f}", f"{tokens / gen:,.0f}",
                     f"{side.median('reward_s'):.3f}", f"{side.median('update_s'):.3f}",
                     f"{tokens / prompts_total:.1f}"])
    typer.echo(f"{env_id} one turn, {model}, {prompts} prompts x {group} rollouts, {max_new_tokens} new tokens, fp32, "
               f"torch threads {threads}; ours: {method}, {'on-policy shortcut' if shortcut else 'scoring pass'}; "
               f"{n} timed steps each (medians), load average {summary['load_average'][0]:.1f}")
    typer.echo(tabulate(rows, headers=["one GRPO step", "s / step", "generation s", "gen tokens/s", "reward s",
                                       "scoring + update s", "mean completion"]))
    ratio = summary["trl_over_ours"]
    typer.echo(f"TRL / ours: {ratio['medians']:.3f} (medians), {ratio['pairs_median']:.3f} (median of {n} adjacent "
               f"pairs), rounds {', '.join(f'{r:.3f}' for r in rounds)}")
    typer.echo(f"commit {summary['commit']}; " + ", ".join(f"{k} {v}" for k, v in summary["versions"].items()))


if __name__ == "__main__":
    typer.run(main)
