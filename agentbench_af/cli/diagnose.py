"""`agentbench-af diagnose RUN_DIR` and `agentbench-af diagnose --model PATH --env ID`: the Action Bottleneck.

A run directory is read from its saved rollout samples (`rollouts/step-*.pt`, every step; the report is
the last one's); without them (or with `--fresh`) grouped rollouts are sampled from its final_policy. A
model directory (a run's final_policy / warm_start, or a Hugging Face model) is always sampled. The
headline's gradients are taken at the policy loaded (for saved rollouts: the run's final_policy, else its
warm start; so the last saved batch was sampled one update or more before that policy), with the run's
`diagnostic` settings (defaults for a model directory without a run config; `--max-groups` over them), over
the parameters the run's RL trains: fresh LoRA adapters for a LoRA run, every parameter otherwise
(`--lora-rank` chooses; `diagnose.gradient_space`). The work is in
`agentbench_af.diagnose` (sample.py, pipeline.py, inputs.py) and `train.bookkeeping.saved_run` (reading a run
directory); this file parses and prints. A killed call resumes: the same call again reuses the sampled batch
and every measured group's gradients kept in OUT/.diagnose-checkpoint (`results.diagnose_checkpoint`), removed at the end.
Left out: several runs at once (run the command per run; `agentbench-af table` compares records).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import typer

from agentbench_af.cli.app import app


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _device(name: str):
    import torch

    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise _fail(f"--device {name}: no CUDA device is available")
    return torch.device(name)


def _load_model(path: Path, device, what: str):
    from agentbench_af.models.policy import Policy, is_model_dir

    if not path.is_dir():
        raise _fail(f"{what}: no such directory {path}")
    if not is_model_dir(path):
        raise _fail(f"{what}: {path} is not a policy or Hugging Face model directory (no policy.json / config.json)")
    try:
        return Policy.load(path, device)
    except (OSError, ValueError) as exc:
        raise _fail(f"{what}: cannot load {path}: {str(exc).splitlines()[0]}") from exc


def _ref_model(ref: Path | None, tokenizer, device):
    if ref is None:
        return None
    ref_policy = _load_model(ref, device, "--ref")
    if tokenizer is not None and ref_policy.tokenizer.get_vocab() != tokenizer.get_vocab():
        raise _fail(f"--ref: {ref} has another tokenizer than the policy; the energies must score the same ids")
    return ref_policy.lm.eval()


@dataclasses.dataclass(frozen=True)
class _Space:
    """The headline's settings from the command line: groups measured and the gradients' parameters."""

    max_groups: int | None
    lora_rank: int | None

    def settings(self, cfg) -> dict:
        """`compute_headline` keyword arguments: the run's diagnostic settings, --max-groups over them."""
        base = dataclasses.asdict(cfg.diagnostic) if cfg is not None else {}
        return base if self.max_groups is None else {**base, "max_groups": self.max_groups}

    def model(self, lm, cfg, seed: int, group_size: int):
        """The policy with the gradient space of the run (or of --lora-rank) and its description; a clear
        error when one group's gradients would not fit in memory."""
        from agentbench_af.diagnose.gradient_space import check_gradient_memory, gradient_space, n_trainable
        from agentbench_af.train.config import ModelConfig

        model_cfg = cfg.model if cfg is not None else ModelConfig()
        try:
            if self.lora_rank is not None:
                model_cfg = dataclasses.replace(model_cfg, lora_rank=self.lora_rank)
            lm, described = gradient_space(lm, model_cfg.lora_for(sft=False), seed)
            check_gradient_memory(n_trainable(lm), group_size)
        except (ValueError, ImportError) as exc:
            raise _fail(str(exc).splitlines()[0]) from exc
        return lm, described


def _checkpoint(out: Path, key: dict, what: str):
    """The output folder's checkpoint for `key` (`results.diagnose_checkpoint`), saying what it resumes from."""
    from agentbench_af.results.diagnose_checkpoint import CHECKPOINT_DIR, DiagnoseCheckpoint

    try:
        ck = DiagnoseCheckpoint.open(out / CHECKPOINT_DIR, key)
    except OSError as exc:
        raise _fail(str(exc).splitlines()[0]) from exc
    def count(n: int, what: str) -> list[str]:
        return [f"{n} {what}{'s' if n != 1 else ''}"] if n else []

    if ck.resumed_batch or ck.resumed_groups or ck.resumed_chunks:
        parts = (["the sampled batch"] if ck.resumed_batch else count(ck.resumed_chunks, "sampled chunk")) + \
            count(ck.resumed_groups, "measured group")
        typer.echo(f"resuming {what}: {' and '.join(parts)} from {ck.folder}", err=True)
    return ck


class _GroupBar:
    """A progress bar over the headline's measured groups (a context manager; `on_group` is the headline's
    callback), opened at the first group, so that an error before any gradient prints one line, not a bar."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.bar: Any = None

    def __enter__(self) -> _GroupBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def on_group(self, done: int, total: int) -> None:
        if self.bar is None:
            from tqdm.auto import tqdm

            self.bar = tqdm(desc="headline gradients", unit="group", total=total, disable=self.quiet, leave=False)
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _print_summary(stats, head: str, headline, gradients: str | None = None) -> None:
    from agentbench_af.diagnose.report import undefined_reason, verdict

    typer.echo(f"{head}: {stats.n_groups_used}/{stats.n_groups} groups with reward variance, "
               f"{stats.n_generated_tokens} generated tokens")
    typer.echo(f"headline: {headline.verdict()}" + (f" (gradients over {gradients})" if gradients else ""))
    for key, r in headline.roles.items():
        lift = "–" if r.lift is None else f"{r.lift:.2f}"
        corr = "–" if r.pearson_sum is None else f"{r.pearson_sum:.2f}"
        typer.echo(f"  {key:<9} gradient-signal lift {lift}, Pearson(R, energy sum) {corr} "
                   f"over {r.pearson_sum_groups} groups")
    typer.echo("secondary (|c| ratio, read against its null):")
    for name, src in stats.sources.items():
        action = src.overall.roles["action"]
        if src.bottleneck_ratio is None:
            typer.echo(f"  {name:<8} action ratio undefined ({undefined_reason(src)})")
            continue
        null = "" if action.null_ratio is None else f" (null {action.null_ratio:.2f})"
        typer.echo(f"  {name:<8} action ratio {src.bottleneck_ratio:.2f}{null}: action {100 * action.token_share:.1f}% "
                   f"of tokens, {100 * action.signal_share:.1f}% of signal")
    if stats.sources:
        typer.echo(f"secondary: {verdict(next(iter(stats.sources.values())))}")


@app.command("diagnose")
def diagnose_command(
    run_dir: Path = typer.Argument(None, help="A run directory written by `train`."),
    model: Path = typer.Option(None, "--model", help="A policy directory (a run's final_policy or warm_start) "
                               "or a Hugging Face model directory; sampled on --env."),
    env: str = typer.Option(None, "--env", help="Environment id for --model (default: the run's, for a run's policy)."),
    prompts: int = typer.Option(32, "--prompts", help="Groups (seeds of the training range) to sample."),
    group: int = typer.Option(None, "--group", help="Rollouts per group (default: the run's group size, else 8)."),
    temperature: float = typer.Option(None, "--temperature", help="Sampling temperature (default: the run's, else 1)."),
    ref: Path = typer.Option(None, "--ref", help="A reference model directory: adds the `ref` energy."),
    out: Path | None = typer.Option(None, "--out", help="Output folder (default: RUN_DIR/diagnose or ./diagnose-<env>)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the sampled seeds and of sampling."),
    fresh: bool = typer.Option(False, "--fresh", help="Sample from RUN_DIR's final_policy even if it saved rollouts."),
    device: str = typer.Option("auto", "--device", help="cpu, cuda or auto."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
    max_groups: int = typer.Option(None, "--max-groups", help="Groups with reward variance whose gradients the "
                                   "headline measures (default: the run's diagnostic.max_groups, else 16)."),
    lora_rank: int = typer.Option(None, "--lora-rank", help="Take the headline's gradients over fresh LoRA "
                                  "adapters of this rank (0: every parameter; default: the run's model.lora_rank)."),
    rollout_set: list[str] = typer.Option([], "--rollout", help="KEY=VALUE: a rollout setting for sampling "
                                          "(repeatable; e.g. max_batch_size=16, context_mode=window)."),
    sample_chunk: int = typer.Option(0, "--sample-chunk", help="Sample N groups at a time and keep each finished "
                                     "chunk, so that a killed call resumes at its chunk (0: all at once; more "
                                     "than one chunk draws other random numbers than one)."),
) -> None:
    """Action Bottleneck diagnostic: bottleneck.json/.md, plots and tokens.html; prints the ratio per energy."""
    if (run_dir is None) == (model is None):
        raise _fail("give either RUN_DIR or --model PATH (with --env ID)")
    if run_dir is not None and env is not None:
        raise _fail("--env goes with --model; a run directory is diagnosed on its own environment")
    from agentbench_af.models.policy import is_model_dir
    from agentbench_af.train.bookkeeping import saved_run

    torch_device = _device(device)
    if max_groups is not None and max_groups < 1:
        raise _fail(f"--max-groups must be >= 1, got {max_groups}")
    if lora_rank is not None and lora_rank < 0:
        raise _fail(f"--lora-rank must be >= 0, got {lora_rank}")
    if sample_chunk < 0:
        raise _fail(f"--sample-chunk must be >= 0 (0: all groups at once), got {sample_chunk}")
    space = _Space(max_groups, lora_rank)
    if run_dir is not None:
        try:
            cfg = saved_run.run_config(run_dir)
        except ValueError as exc:
            raise _fail(str(exc)) from exc
        saved = [] if fresh else saved_run.saved_rollout_paths(run_dir)
        if saved:
            if prompts != 32 or group is not None or temperature is not None or seed != 0 or rollout_set or sample_chunk:
                typer.echo("note: --prompts/--group/--temperature/--seed/--rollout/--sample-chunk apply to sampling; reading the run's saved "
                           "rollouts (add --fresh to sample from its final_policy)", err=True)
            _diagnose_saved(run_dir, cfg, saved, out or run_dir / "diagnose", ref, torch_device, space, quiet)
            return
        if not is_model_dir(run_dir / "final_policy"):
            why = "no final_policy" if fresh else "no saved rollouts (rollouts/step-*.pt) and no final_policy"
            raise _fail(f"{run_dir} has {why}: is the run finished? (try `train --resume`)")
        model, step, out = run_dir / "final_policy", cfg.rl.steps, out or run_dir / "diagnose"
    else:
        if not model.is_dir():
            raise _fail(f"--model: no such directory {model}")
        try:
            cfg = saved_run.config_near_policy(model)
        except ValueError as exc:
            raise _fail(str(exc)) from exc
        step = {"warm_start": 0, "final_policy": cfg.rl.steps}.get(model.name) if cfg is not None else None
        if env is None and cfg is None:
            raise _fail("--env ID is required with --model (see `agentbench-af envs`)")
        if cfg is not None and env is not None and env != cfg.env.id:
            cfg, step = None, None  # another env than the run's: none of its settings apply
    _diagnose_sampled(model, env or cfg.env.id, cfg, step, prompts, group, temperature, ref, out, seed,
                      torch_device, quiet, space, rollout_set, sample_chunk)


def _diagnose_saved(run_dir: Path, cfg, paths: list[Path], out: Path, ref: Path | None, device, space: _Space,
                    quiet: bool) -> None:
    from agentbench_af.diagnose import inputs
    from agentbench_af.diagnose.pipeline import diagnose_batches
    from agentbench_af.diagnose.sample import add_ref_logprobs
    from agentbench_af.results.diagnose_checkpoint import file_stamps, weight_files
    from agentbench_af.results.rollout_store import load_rollouts
    from agentbench_af.train.bookkeeping.saved_run import run_policy_dir

    policy_dir = run_policy_dir(run_dir, cfg)
    policy = _load_model(policy_dir, device, "the run's policy") if policy_dir is not None else None
    tokenizer = policy.tokenizer if policy is not None else None
    if policy is None:
        typer.echo(f"note: no policy folder in {run_dir}: the token page shows token ids and the headline has "
                   "no gradient part", err=True)
    ref_lm = _ref_model(ref, tokenizer, device)
    prepare = None if ref_lm is None else (lambda b: add_ref_logprobs(b, ref_lm, cfg.rollout.temperature, device))
    lm, gradients = (None, None) if policy is None else space.model(policy.lm, cfg, cfg.run.seed,
                                                                    cfg.rollout.group_size)
    meta = {"run": run_dir.name, "env": cfg.env.id, "method": cfg.method, "ref": ref.name if ref else None,
            "source": "saved rollouts", "steps": len(paths),
            "headline_policy": policy_dir.name if policy_dir is not None else None, "headline_gradients": gradients}
    ck = _checkpoint(out, {"source": "saved rollouts", "run": str(run_dir.resolve()),
                           "rollouts": file_stamps(paths, run_dir),
                           "policy": None if policy_dir is None else weight_files(policy_dir), "gradients": gradients,
                           "seed": cfg.run.seed, "device": str(device)}, "the headline")
    try:
        with _GroupBar(quiet) as groups_bar:
            result = diagnose_batches((load_rollouts(p) for p in paths), out,
                                      inputs.token_texts(tokenizer) if tokenizer is not None else inputs.id_texts,
                                      meta=meta, title=f"{cfg.env.id} {cfg.method} ({run_dir.name})", prepare=prepare,
                                      lm=lm, temperature=cfg.rollout.temperature,
                                      device=device, format_role=cfg.credit.format_role,
                                      headline_settings=space.settings(cfg), grams=ck, on_group=groups_bar.on_group)
    except ValueError as exc:
        raise _fail(str(exc).splitlines()[0]) from exc
    ck.finish()
    steps = [s for s, _ in result.history]
    _print_summary(result.stats, f"{cfg.env.id} {cfg.method}, saved rollouts of step {result.step} "
                                 f"({len(steps)} saved step{'s' if len(steps) != 1 else ''})", result.headline,
                   gradients)
    if len(steps) >= 2:
        typer.echo("action ratio (`old`) by step: " + ", ".join(
            f"{s} {st.sources['old'].bottleneck_ratio:.2f}" if st.sources["old"].bottleneck_ratio is not None else f"{s} –"
            for s, st in result.history))
    typer.echo(f"wrote {len(result.written)} files in {out}")


def _diagnose_sampled(model: Path, env_id: str, cfg, step: int | None, prompts: int, group: int | None,
                      temperature: float | None, ref: Path | None, out: Path | None, seed: int, device,
                      quiet: bool, space: _Space, rollout_set: list[str], sample_chunk: int = 0) -> None:
    from tqdm.auto import tqdm

    import agentbench_af
    from agentbench_af.diagnose import inputs
    from agentbench_af.diagnose.pipeline import diagnose_batches
    from agentbench_af.diagnose.sample import SampleSpec, sample_batch
    from agentbench_af.results.diagnose_checkpoint import weight_files
    from agentbench_af.rollout.types import RolloutConfig

    env_kwargs = dict(cfg.env.overrides) if cfg is not None else {}
    try:
        agentbench_af.make(env_id, **env_kwargs)
    except (KeyError, TypeError, ValueError, ImportError) as exc:
        raise _fail(f"--env: {exc.args[0] if exc.args else exc}") from exc
    rollout = cfg.rollout if cfg is not None else RolloutConfig()
    try:
        rollout = rollout.overridden(rollout_set)
        rollout = dataclasses.replace(rollout, group_size=group or rollout.group_size,
                                      temperature=rollout.temperature if temperature is None else temperature)
        spec = SampleSpec(env_id, prompts, rollout, cfg.credit.format_role if cfg is not None else "reasoning",
                          env_kwargs, seed, sample_chunk if sample_chunk < prompts else 0)
    except ValueError as exc:
        raise _fail(str(exc)) from exc
    policy = _load_model(model, device, "--model")
    ref_lm = _ref_model(ref, policy.tokenizer, device)
    # before sampling, so that a space that does not fit fails at once; fresh adapters (B = 0) sample as without
    lm, gradients = space.model(policy.lm, cfg, cfg.run.seed if cfg is not None else seed, rollout.group_size)
    out = out or Path(f"diagnose-{env_id}")
    ck = _checkpoint(out, {"source": "sampled", "model": str(model.resolve()), "weights": weight_files(model),
                           "spec": {k: v for k, v in dataclasses.asdict(spec).items()  # keys of unchunked calls unchanged
                                    if k != "chunk_groups" or v},
                           "gradients": gradients, "device": str(device),
                           "ref": None if ref is None else [str(ref.resolve()), weight_files(ref)]}, "the diagnostic")
    batch = ck.batch()
    if batch is None:
        bar = tqdm(desc=f"sampling {env_id} ({prompts} x {rollout.group_size})", unit="turn", disable=quiet, leave=False)
        batch = ck.save_batch(sample_batch(policy, spec, device, ref_lm, progress=bar.update, chunks=ck.chunks()))
        bar.close()
    meta = {"model": model.name if cfg is not None else str(model), "env": env_id, "prompts": prompts,
            "group": rollout.group_size, "temperature": rollout.temperature, "seed": seed,
            "ref": ref.name if ref else None, "source": "sampled", "headline_gradients": gradients,
            "rollout_settings": list(rollout_set), **({"sample_chunk": spec.chunk_groups} if spec.chunk_groups else {})}
    label = f"{model.parent.name}/{model.name}" if cfg is not None else model.name
    with _GroupBar(quiet) as groups_bar:
        result = diagnose_batches([(step, batch)], out, inputs.token_texts(policy.tokenizer), meta=meta,
                                  title=f"{env_id} {label}", lm=lm, temperature=rollout.temperature,
                                  device=device, format_role=spec.format_role, headline_settings=space.settings(cfg),
                                  grams=ck, on_group=groups_bar.on_group)
    ck.finish()
    _print_summary(result.stats, f"{env_id} {label}, {prompts} groups x {rollout.group_size} rollouts "
                                 f"at temperature {rollout.temperature:g}", result.headline, gradients)
    typer.echo(f"wrote {len(result.written)} files in {out}")
