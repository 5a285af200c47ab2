"""`reproduce`: run a named preset (a sweep spec shipped in `baselines/presets/`) and publish a leaderboard.

The work (checkpoints, policies, shared warm starts) goes to `runs/reproduce/<preset>/`, which is never
committed; the leaderboard folder (default `leaderboards/<preset>/`) receives only each run's
`record.json` (as `runs/<run name>/record.json`), then the tables and plots generated from those
records exactly as `agentbench-af table` and `agentbench-af plot` generate them. Re-running skips the
finished runs (sweep config hashes) and resumes killed ones.

The `paper` preset names Hugging Face models (Qwen2.5-Instruct sizes) that are looked up under
`--model-dir`; it refuses to start, with one line saying what is missing, when a model directory, its
weights or (for runs on `cuda`) a CUDA device are absent. A preset can be cut to a subset of its grid
(`envs`, `models`, `methods`, `seeds`: values the preset has) and given `key=value` overrides that win
over every setting of the preset, its per-environment ones included (e.g. a CPU smoke test of `paper`
on a small local model: `run.device=cpu`, fewer steps). It refuses to start
from a checkout whose tracked files differ from their commit (`--allow-dirty` overrides; the records then
name `<commit>-dirty` and the table says so). Left out: grid values the preset does not have (write a
spec and use `agentbench-af sweep`).
"""

from __future__ import annotations

import dataclasses
import functools
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from agentbench_af.models.hf import WEIGHT_FILES
from agentbench_af.models.names import is_named_model
from agentbench_af.results.record import git_commit
from agentbench_af.sweep.runner import Backend, RunOutcome, plan_sweep, run_sweep
from agentbench_af.sweep.spec import GridSpec, SweepSpec, load_sweep_spec, named_models


class ReproduceError(RuntimeError):
    """The preset cannot start here (unknown name, missing weights, no GPU); one-line message."""


@dataclass(frozen=True)
class ReproduceConfig:
    preset: str  # a name in `preset_names()` or a path to a sweep spec YAML
    out_dir: Path | None = None  # leaderboard folder; default leaderboards/<preset>
    work_dir: Path | None = None  # checkpoints and policies; default runs/reproduce/<preset>
    backend: Backend = "local"
    workers: int | None = None
    model_dir: Path | None = None  # where the Hugging Face models of the `paper` preset live
    envs: tuple[str, ...] = ()  # run only these of the preset's environments (empty: all)
    models: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    seeds: tuple[int, ...] = ()
    overrides: tuple[str, ...] = ()  # key=value, applied after everything the preset sets
    imports: tuple[str, ...] = ()  # plugin modules (`--import`), added to the preset's own
    allow_dirty: bool = False  # run although tracked files differ from the commit (records name it -dirty)

    @property
    def name(self) -> str:
        return Path(self.preset).stem if self.preset.endswith((".yaml", ".yml")) else self.preset

    @property
    def leaderboard(self) -> Path:
        return self.out_dir or Path("leaderboards") / self.name

    @property
    def work(self) -> Path:
        return self.work_dir or Path("runs") / "reproduce" / self.name


def presets_dir() -> Path:
    return Path(str(resources.files("agentbench_af.baselines") / "presets"))


def preset_names() -> list[str]:
    return sorted(p.stem for p in presets_dir().glob("*.yaml"))


def preset_path(preset: str) -> Path:
    """The spec file of a preset name (or `preset` itself when it is a YAML path)."""
    if preset.endswith((".yaml", ".yml")):
        path = Path(preset)
        if not path.is_file():
            raise ReproduceError(f"no preset file {path}")
        return path
    path = presets_dir() / f"{preset}.yaml"
    if not path.is_file():
        raise ReproduceError(f"unknown preset {preset!r}; choose one of {preset_names()} or give a spec YAML path")
    return path


def hub_models(spec: SweepSpec) -> list[str]:
    """Grid models that are not built-in names (Hugging Face models, looked up under --model-dir)."""
    return [m for m in named_models(spec) if not is_named_model(m)]


def check_model_dir(models: list[str], model_dir: Path | None) -> dict[str, Path]:
    """Each hub model's local directory under `model_dir`, or ReproduceError naming what is missing."""
    hint = ("download them where there is network access, e.g. `huggingface-cli download Qwen/{m} "
            "--local-dir {d}/{m}`, then pass --model-dir {d}")
    if model_dir is None:
        raise ReproduceError(f"this preset trains {', '.join(models)}: pass --model-dir DIR with one folder per "
                             f"model ({hint.format(m=models[0], d='DIR')})")
    found = {}
    for m in models:
        path = Path(model_dir).expanduser() / m
        if not (path / "config.json").is_file() or not any((path / f).is_file() for f in WEIGHT_FILES):
            raise ReproduceError(f"no weights for {m} in {path} (need config.json and model.safetensors); "
                                 + hint.format(m=m, d=model_dir))
        found[m] = path.resolve()
    return found


def check_gpu(spec: SweepSpec) -> None:
    """ReproduceError when a run of `spec` asks for `cuda` and there is none."""
    import torch

    from agentbench_af.sweep.spec import expand

    if any(c.run.device.startswith("cuda") for c in expand(spec)) and not torch.cuda.is_available():
        raise ReproduceError("this preset trains billion-parameter models and needs a CUDA GPU, but "
                             "torch.cuda.is_available() is False; run a cpu-* preset here instead")


def _subset(axis: str, chosen: tuple, preset: tuple, name: str) -> tuple:
    """`chosen` (in the preset's order) when every value is on the preset's axis; all of it when empty."""
    missing = [v for v in chosen if v not in preset]
    if missing:
        raise ReproduceError(f"preset {name} has no {axis} {missing}; its {axis}: {list(preset)}")
    return tuple(v for v in preset if v in chosen) if chosen else preset


def _models_by_env(spec: SweepSpec, envs: tuple[str, ...], chosen: tuple[str, ...], name: str) -> dict[str, list[str]]:
    """Each environment's model axis (its `per_env_models` entry, else grid.models) cut to `chosen`;
    environments left with no model are dropped."""
    axes = {env: list(spec.per_env_models.get(env, spec.grid.models)) for env in envs}
    offered = list(dict.fromkeys(m for axis in axes.values() for m in axis))
    missing = [m for m in chosen if m not in offered]
    if missing:
        raise ReproduceError(f"preset {name} has no models {missing}; its models: {offered}")
    cut = {env: [m for m in axis if not chosen or m in chosen] for env, axis in axes.items()}
    return {env: axis for env, axis in cut.items() if axis}


def prepare_spec(cfg: ReproduceConfig) -> SweepSpec:
    """The preset's spec cut to the chosen grid values, with the overrides, its work folder and, for hub
    models, their local paths filled in."""
    spec = load_sweep_spec(preset_path(cfg.preset), cfg.imports)
    g = spec.grid
    grid = GridSpec(envs=_subset("envs", cfg.envs, g.envs, cfg.name),
                    models=_subset("models", cfg.models, g.models, cfg.name) if not spec.per_env_models else g.models,
                    methods=_subset("methods", cfg.methods, g.methods, cfg.name),
                    seeds=_subset("seeds", cfg.seeds, g.seeds, cfg.name))
    per_env_models: dict[str, list[str]] = {}
    if spec.per_env_models:  # every environment gets its model axis spelled out, cut to --model
        per_env_models = _models_by_env(spec, grid.envs, cfg.models, cfg.name)
        grid = dataclasses.replace(grid, envs=tuple(per_env_models))
    per_env = {env: items for env, items in spec.per_env.items() if not grid.envs or env in grid.envs}
    per_method = {m: items for m, items in spec.per_method.items() if not grid.methods or m in grid.methods}
    if cfg.overrides:  # after the per-environment settings too, so they have the last word
        per_env = {env: [*per_env.get(env, []), *cfg.overrides] for env in grid.envs} if grid.envs else per_env
    spec = dataclasses.replace(spec, grid=grid, per_env=per_env, per_env_models=per_env_models, per_method=per_method,
                               overrides=(*spec.overrides, *cfg.overrides))
    models = hub_models(spec)
    if models:
        paths = check_model_dir(models, cfg.model_dir)
        local = {m: str(paths.get(m, m)) for m in named_models(spec)}
        grid = dataclasses.replace(grid, models=tuple(local[m] for m in grid.models))
        spec = dataclasses.replace(spec, grid=grid, per_env_models={
            env: [local[m] for m in ms] for env, ms in per_env_models.items()})
        check_gpu(spec)
    return dataclasses.replace(spec, out_dir=str(cfg.work.resolve()))


def publish_records(outcomes: list[RunOutcome], leaderboard: Path) -> list[Path]:
    """Copy each finished or failed run's record.json into `leaderboard/runs/<name>/record.json`."""
    from agentbench_af.io import atomic_write

    written = []
    for o in outcomes:
        src = Path(o.run_dir) / "record.json"
        if src.is_file():
            dst = leaderboard / "runs" / o.name / "record.json"
            written.append(atomic_write(dst, functools.partial(shutil.copyfile, src)))
    return written


def check_clean_tree(cfg: ReproduceConfig) -> None:
    """ReproduceError when the checkout has uncommitted changes to tracked files (unless `allow_dirty`):
    a leaderboard record must name the commit whose code ran."""
    commit = git_commit()
    if commit and commit.endswith("-dirty") and not cfg.allow_dirty:
        raise ReproduceError(f"the checkout has uncommitted changes (commit {commit[:7]}-dirty), so no commit would "
                             "name the code these records come from; commit or stash them first, or pass "
                             "--allow-dirty (every record then names the -dirty commit and the table notes it)")


def reproduce(cfg: ReproduceConfig, show_progress: bool = True) -> list[RunOutcome]:
    """Run the preset's sweep (skipping finished runs) and copy its records into the leaderboard folder;
    refuses a checkout with uncommitted changes unless `cfg.allow_dirty`."""
    check_clean_tree(cfg)
    spec = prepare_spec(cfg)
    outcomes = run_sweep(spec, backend=cfg.backend, workers=cfg.workers, show_progress=show_progress)
    publish_records(outcomes, cfg.leaderboard)
    return outcomes


def describe(cfg: ReproduceConfig) -> str:
    """One line: how many runs the preset has and how many are still to do."""
    plan = plan_sweep(prepare_spec(cfg))
    g = plan.spec.grid
    cells = len({(r.cfg.env.id, r.cfg.model.path or r.cfg.model.name) for r in plan.runs})
    return (f"preset {cfg.name}: {cells} (env, model) cell(s) over {len(g.envs)} env(s) x {len(g.methods)} "
            f"method(s) x {len(g.seeds)} seed(s) = {len(plan.runs)} runs, {len(plan.todo)} to run, "
            f"{len(plan.warm_starts)} shared warm starts; work in {cfg.work}, leaderboard in {cfg.leaderboard}")
