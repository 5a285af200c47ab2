"""The warm start: a tiny policy SFT'd on expert demonstrations (or `model.path`), saved as a policy folder.

Its provenance is checked, not assumed. A warm-start folder records the settings it was built with
(`warm_start.yaml`: env, model, sft, rollout and seed, plus the SFT statistics);
`prepare_warm_start` reuses a folder only when those equal the run's, and rebuilds it otherwise (a
folder left by an earlier config, or one without a readable record). A run that branches from
`run.init_from` uses that folder as it is, and its record states what it was built with.
While it is built, the SFT loop checkpoints beside the folder (`<folder>.sft-<settings key>.pt`), so a
killed build continues where it stopped; the file is removed once the folder is saved, and one written
under other settings is never read (its name carries their key).
With `model.lora_rank` > 0 the SFT trains LoRA adapters only (`models.lora`), and the folder holds the
model with them merged into its weights (`Policy.save`): a plain model for RL or a later `run.init_from`.
Left out: partial reuse (a changed SFT budget rebuilds from scratch rather than training on).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
import yaml
from tqdm.auto import tqdm

from agentbench_af.config import ConfigError, from_dict, to_dict
from agentbench_af.io import atomic_dir, atomic_write_text
from agentbench_af.models.checkpointing import enable_checkpointing
from agentbench_af.models.lora import add_lora
from agentbench_af.models.policy import Policy, build_policy
from agentbench_af.rollout.types import RolloutConfig
from agentbench_af.train.config import TrainConfig
from agentbench_af.train.warm.sft import sft_warm_start

#: the config sections a warm start depends on (SFT demonstrations use the collector's contexts)
WARM_START_FIELDS = ("env", "model", "sft", "rollout")
RECORD_FILE = "warm_start.yaml"


#: rollout settings that only RL sampling reads, set to their defaults in a warm start's settings: SFT never
#: samples, so a run with DAPO's dynamic sampling branches from the same warm start as one without (set, not
#: dropped, so that the keys of warm starts built before this stay as they were)
RL_ONLY_ROLLOUT = ("dynamic_sampling", "dynamic_sampling_max_rounds")


#: rollout settings that only RL sampling reads and that came after warm starts were first keyed: dropped
RL_ONLY_ROLLOUT_DROPPED = ("sampler_dtype",)


def same_warm_start_data(data: dict[str, Any]) -> dict[str, Any]:
    """`data` (a config's warm-start sections, as plain data) with the `RL_ONLY_ROLLOUT` fields at their defaults
    and the `RL_ONLY_ROLLOUT_DROPPED` ones left out."""
    defaults = RolloutConfig()
    rollout = {**data["rollout"], **{k: getattr(defaults, k) for k in RL_ONLY_ROLLOUT if k in data["rollout"]}}
    return {**data, "rollout": {k: v for k, v in rollout.items() if k not in RL_ONLY_ROLLOUT_DROPPED}}


def warm_start_settings(cfg: TrainConfig) -> dict[str, Any]:
    """Everything that decides the warm start `cfg` builds, as plain data (not `credit.format_role`: SFT
    trains on every generated token whatever its role; not the `RL_ONLY_ROLLOUT` sampling settings (at their
    defaults); not `model.gradient_checkpointing` nor `sft.micro_batch_rows`: they change
    the SFT's memory, not its gradients; not the `model.lora_*` fields while `model.lora_rank` is 0: they
    do nothing then, and a warm start built before they existed keeps its key)."""
    data = {k: v for k, v in to_dict(cfg).items() if k in WARM_START_FIELDS}
    data["model"] = {k: v for k, v in data["model"].items()
                     if k != "gradient_checkpointing" and not (k.startswith("lora_") and cfg.model.lora_rank == 0)}
    if "sft" in data:
        data["sft"] = {k: v for k, v in data["sft"].items() if k != "micro_batch_rows"}
    return {**same_warm_start_data(data), "seed": cfg.warm_start_seed}


def settings_key(settings: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]


def recorded_settings(warm_dir: Path) -> dict[str, Any] | None:
    """The settings a warm-start folder was built with, or None (no policy, no readable record)."""
    warm_dir = Path(warm_dir)
    if not (warm_dir / "policy.json").exists():
        return None
    try:
        saved = yaml.safe_load((warm_dir / RECORD_FILE).read_text())
        return warm_start_settings(from_dict(TrainConfig, saved["config"]))
    except (OSError, yaml.YAMLError, ConfigError, KeyError, TypeError):
        return None


@dataclass(frozen=True)
class WarmStart:
    """The warm start a run used: where, how it came to be, and the settings it was built with."""

    path: Path
    source: Literal["built", "reused", "init_from"]
    settings: dict[str, Any] | None  # None: not built by agentbench-af (a final policy, a model folder)
    matches_config: bool  # built with the run's own warm-start settings

    def to_record(self) -> dict[str, Any]:
        s = self.settings
        return {"path": str(self.path), "source": self.source, "key": settings_key(s) if s else None,
                "matches_config": self.matches_config, "sft": s["sft"] if s else None,
                "model": s["model"] if s else None, "seed": s["seed"] if s else None}

    @property
    def sft_steps(self) -> int | None:
        return self.settings["sft"]["steps"] if self.settings else None


def sft_checkpoint_path(cfg: TrainConfig, out_dir: Path) -> Path:
    """Where the SFT loop building `out_dir` for `cfg` keeps its checkpoint (keyed by the warm-start settings)."""
    out_dir = Path(out_dir)
    return out_dir.with_name(f"{out_dir.name}.sft-{settings_key(warm_start_settings(cfg))}.pt")


def _build(cfg: TrainConfig, out_dir: Path, device: torch.device, show_progress: bool, checkpoint: Path) -> None:
    torch.manual_seed(cfg.warm_start_seed)
    if cfg.model.path:
        policy = Policy.load(cfg.model.path, device)
    else:
        policy = build_policy(cfg.model.name, [cfg.env.id], cfg.model.vocab_size, cfg.model.tokenizer_episodes,
                              cfg.warm_start_seed, env_kwargs={cfg.env.id: cfg.env.overrides})
    policy.lm.to(device)
    lora = cfg.model.lora_for(sft=True)
    if lora is not None:
        add_lora(policy.lm, lora, seed=cfg.warm_start_seed)
    if cfg.model.gradient_checkpointing:
        enable_checkpointing(policy.lm)
    bar = tqdm(total=cfg.sft.steps, desc=f"warm start {cfg.env.id}", disable=not show_progress, leave=False)

    def show(step: int, loss: float) -> None:
        bar.update(step + 1 - bar.n)
        bar.set_postfix(loss=f"{loss:.3f}")

    stats = sft_warm_start(policy.lm, policy.tokenizer, policy.chat, cfg, device, checkpoint=checkpoint, progress=show)
    bar.close()
    policy.save(out_dir)
    record = {"sft": stats, "key": settings_key(warm_start_settings(cfg)), "config": to_dict(cfg)}
    atomic_write_text(out_dir / RECORD_FILE, yaml.safe_dump(record, sort_keys=False))


def prepare_warm_start(cfg: TrainConfig, out_dir: Path, device: torch.device, show_progress: bool = True) -> Path:
    """Build the tiny policy and SFT it (or load `model.path`) into `out_dir`, unless `out_dir` already
    holds a warm start built with the same settings; a folder built with other settings is rebuilt."""
    out_dir = Path(out_dir)
    if recorded_settings(out_dir) != warm_start_settings(cfg):
        checkpoint = sft_checkpoint_path(cfg, out_dir)
        with atomic_dir(out_dir) as tmp:
            _build(cfg, tmp, device, show_progress, checkpoint)
        checkpoint.unlink(missing_ok=True)
    return out_dir


def warm_start_for(cfg: TrainConfig, run_dir: Path, device: torch.device, show_progress: bool = True) -> WarmStart:
    """The run's warm start: `run.init_from` as it is, else `<run_dir>/warm_start` (built or checked)."""
    own = warm_start_settings(cfg)
    if cfg.run.init_from:
        found = recorded_settings(Path(cfg.run.init_from))
        return WarmStart(Path(cfg.run.init_from), "init_from", found, found == own)
    path = Path(run_dir) / "warm_start"
    reused = recorded_settings(path) == own
    prepare_warm_start(cfg, path, device, show_progress)
    return WarmStart(path, "reused" if reused else "built", own, True)
