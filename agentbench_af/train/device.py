"""Where a run computes: its device and autocast dtype, from `run.device` and `model.dtype`.

Left out: several devices per run (sweeps parallelise runs instead).
"""

from __future__ import annotations

import torch

from agentbench_af.train.config import TrainConfig


def resolve_device(cfg: TrainConfig) -> tuple[torch.device, torch.dtype | None]:
    """`(device, autocast dtype or None)`; `auto` picks CUDA when available; bf16 on CUDA unless float32."""
    name = cfg.run.device
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"run.device={cfg.run.device!r} but no CUDA device is available")
    device = torch.device(name)
    return device, autocast_dtype(cfg, device)


def autocast_dtype(cfg: TrainConfig, device: torch.device) -> torch.dtype | None:
    """The autocast dtype of `cfg`'s forwards on `device` (SFT and RL alike): bf16 when `model.dtype` is
    bfloat16, or auto on CUDA; None (fp32) otherwise."""
    want_bf16 = cfg.model.dtype == "bfloat16" or (cfg.model.dtype == "auto" and device.type == "cuda")
    return torch.bfloat16 if want_bf16 else None


def pin_threads(cfg: TrainConfig) -> None:
    """Pin torch's thread count to `run.threads` (0: leave torch's default, all cores)."""
    if cfg.run.threads > 0:
        torch.set_num_threads(cfg.run.threads)


def use_device(cfg: TrainConfig) -> tuple[torch.device, torch.dtype | None]:
    """Pin torch's thread count (`run.threads`, 0: all cores) and resolve the device."""
    pin_threads(cfg)
    return resolve_device(cfg)
