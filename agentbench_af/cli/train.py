"""Training commands: `train CONFIG.yaml [RECIPE.yaml ...] [key=value ...] [--resume | --overwrite] [--import MODULE]`
and `eval RUN_DIR`.

Further YAML files after the config are merged on top of it in order (section by section), before the
`key=value` overrides: a method-less recipe such as `baselines/recipes/dapo.yaml` combines with any config.

`train` under `torchrun` (`torchrun --nproc-per-node N -m agentbench_af.cli train ...`) is one
data-parallel run: every process runs the command, rank 0 writes the run folder and prints the summary.

`--import` (repeatable) imports a plugin module before the config is built, so `method` and `env.id`
may name what it registers; it is saved in the run's config (`imports`). Left out: launching several
runs (that is `sweep`); trackers other than `run.report_to`'s (metrics stay in the run folder).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
import yaml

from agentbench_af.cli.app import app
from agentbench_af.config import ConfigError, read_config_mapping

IMPORT_HELP = "Import this plugin module first (repeatable); it may register environments and credit methods."


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


@app.command("train", context_settings={"allow_extra_args": False})
def train_command(
    config: Path | None = typer.Argument(None, help="YAML config (see baselines/). Omit to use the defaults."),
    overrides: list[str] = typer.Argument(None, help="Recipe YAML files merged on top of CONFIG (e.g. "
                                          "baselines/recipes/dapo.yaml), then overrides such as rl.steps=10."),
    resume: bool = typer.Option(False, "--resume", help="Continue a killed run from its last checkpoint."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Empty the run folder first (its files are lost)."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bars."),
    imports: list[str] = typer.Option(None, "--import", metavar="MODULE", help=IMPORT_HELP),
) -> None:
    """Train a policy (warm start + RL) and write a run directory with record.json."""
    from agentbench_af.train.config import train_config_from_dict

    if config is not None and "=" in str(config) and not Path(config).exists():
        overrides = [str(config), *(overrides or [])]
        config = None
    layers = [item for item in overrides or [] if "=" not in item and item.endswith((".yaml", ".yml"))]
    overrides = [item for item in overrides or [] if item not in layers]
    try:
        cfg = train_config_from_dict(read_config_mapping(config, overrides, layers), imports or [])
    except ConfigError as exc:
        raise _fail(str(exc)) from exc
    from agentbench_af.train.preflight import check_runnable

    try:
        check_runnable(cfg)
    except ConfigError as exc:
        raise _fail(str(exc)) from exc
    from agentbench_af.io import WriteError
    from agentbench_af.results.tensor_files import UnsafeFileError
    from agentbench_af.train.distributed.ranks import check_world, ranks_from_env
    from agentbench_af.train.loop import train

    if resume and overwrite:
        raise _fail("--resume and --overwrite exclude each other")
    try:
        ranks = ranks_from_env()
        check_world(cfg, ranks)
    except ValueError as exc:  # torchrun's variables, or a batch the processes cannot share evenly
        raise _fail(str(exc)) from exc
    try:
        record = train(cfg, resume=resume, show_progress=not quiet, overwrite=overwrite)
    except FileExistsError as exc:  # busy (locked), a finished run, a checkpoint without --resume, a changed config
        raise _fail(str(exc)) from exc
    except (WriteError, UnsafeFileError) as exc:  # a full disk, a read-only folder; a checkpoint that is not plain data
        raise _fail(str(exc)) from exc
    except FileNotFoundError as exc:  # model.path not on this machine (PretrainedNotFoundError)
        raise _fail(f"model.path: {exc}") from exc
    if ranks.is_main:
        processes = f" on {ranks.world_size} processes ({cfg.run.parallel})" if ranks.active else ""
        typer.echo(
            f"{cfg.run_name}: final-step success {record.final_success:.3f} "
            f"(warm start {record.warm_start_success:.3f}) over {cfg.eval.episodes} eval episodes{processes}; "
            f"record: {Path(cfg.run.out_dir) / cfg.run_name / 'record.json'}"
        )


@app.command("eval")
def eval_command(
    run_dir: Path = typer.Argument(..., help="A run directory written by `train`."),
    episodes: int = typer.Option(None, help="Evaluation episodes (default: the run's)."),
    temperature: float = typer.Option(None, help="Sampling temperature, 0 = greedy (default: the run's)."),
    as_json: bool = typer.Option(False, "--json"),
    policy_name: str = typer.Option("final_policy", "--policy",
                                    help="final_policy, or warm_start (the run's own, else its run.init_from)."),
    reasons: bool = typer.Option(False, "--reasons", help="Also count why turns were invalid, and the responses "
                                 "cut at rollout.max_new_tokens."),
    rollout_set: list[str] = typer.Option([], "--rollout", help="KEY=VALUE: a rollout setting over the run's "
                                          "(repeatable), e.g. max_new_tokens=160; the output names them."),
) -> None:
    """Evaluate a run's final policy (or its warm start) on its evaluation seeds."""
    from tqdm.auto import tqdm

    from agentbench_af.evaluate.evaluate import evaluate_policy
    from agentbench_af.evaluate.invalid_turns import invalid_breakdown
    from agentbench_af.models.policy import Policy
    from agentbench_af.rollout.engine import SAMPLER_DTYPES, TransformersEngine
    from agentbench_af.train.bookkeeping import saved_run
    from agentbench_af.train.config import train_config_from_dict

    cfg_path = run_dir / "config.yaml"
    if not cfg_path.exists():
        raise _fail(f"{run_dir} is not a run directory (no config.yaml)")
    try:
        cfg = train_config_from_dict(yaml.safe_load(cfg_path.read_text()) or {})
    except ConfigError as exc:
        raise _fail(f"{cfg_path}: {exc}") from exc
    try:
        rollout = cfg.rollout.overridden(rollout_set)
    except ValueError as exc:  # ConfigError included
        raise _fail(f"--rollout: {exc}") from exc
    if policy_name not in ("final_policy", "warm_start"):
        raise _fail(f"--policy must be final_policy or warm_start, got {policy_name!r}")
    policy_dir = saved_run.named_policy_dir(run_dir, cfg, policy_name)
    if not policy_dir.exists():
        hint = "is the run finished? try `train --resume`" if policy_name == "final_policy" else \
            f"nor its run.init_from {cfg.run.init_from}" if cfg.run.init_from else "and no run.init_from"
        raise _fail(f"{run_dir} has no {policy_name} ({hint})")
    policy = Policy.load(policy_dir)
    engine = TransformersEngine(policy.lm, policy.pad_token_id, rollout.max_batch_size,
                                sample_dtype=SAMPLER_DTYPES[rollout.sampler_dtype])
    with tqdm(desc=f"eval {cfg.env.id}", unit="turn", disable=None, leave=False) as bar:  # on a terminal only
        result, trajs = evaluate_policy(
            engine, policy.tokenizer, policy.chat, cfg.env.id, episodes or cfg.eval.episodes,
            cfg.eval.temperature if temperature is None else temperature, rollout, cfg.env.overrides,
            progress=bar.update,
        )
    breakdown = invalid_breakdown(trajs, rollout.max_new_tokens) if reasons else None
    if as_json:
        out: dict[str, object] = dict(result.to_dict())
        if breakdown is not None:
            out["invalid_turns"] = breakdown.to_dict()
        if rollout_set:
            out["rollout_settings"] = list(rollout_set)
        typer.echo(json.dumps(out, indent=2))
        return
    settings = f" with {', '.join(rollout_set)}" if rollout_set else ""
    typer.echo(
        f"{cfg.env.id} {cfg.method} ({policy_name}{settings}): success {result.success:.3f}, mean reward "
        f"{result.mean_reward:.3f}, valid {result.valid_rate:.3f}, mean turns {result.mean_turns:.2f} over "
        f"{result.episodes} episodes"
    )
    if breakdown is not None:
        typer.echo(f"invalid turns: {breakdown.invalid} of {breakdown.turns}; responses cut at "
                   f"{rollout.max_new_tokens} tokens: {breakdown.at_limit} ({breakdown.invalid_at_limit} of them invalid)")
        for reason, count in breakdown.by_reason.items():
            typer.echo(f"  {count:6d}  {reason}")
