"""The warm start's learning-rate schedule: linear warm-up, then constant or cosine decay to 0."""

import math

import pytest
import torch

from agentbench_af.train.config import SFTConfig
from agentbench_af.train.warm.sft import sft_scheduler


def _rates(schedule: str) -> list[float]:
    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=2e-3)
    scheduler = sft_scheduler(optimizer, SFTConfig(steps=12, warmup_steps=4, lr=2e-3, schedule=schedule))
    rates = []
    for _ in range(12):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return rates


def test_constant_after_warm_up():
    # warm-up: (step + 1) / 4 of the rate
    assert _rates("constant") == pytest.approx([5e-4, 1e-3, 1.5e-3] + [2e-3] * 9)


def test_cosine_decays_to_zero():
    # step s >= 4: 2e-3 * 0.5 * (1 + cos(pi * (s - 4) / 8)); warm-up s / 4 of the rate, starting at 0
    expected = [2e-3 * s / 4 for s in range(4)] + [1e-3 * (1 + math.cos(math.pi * (s - 4) / 8)) for s in range(4, 12)]
    assert _rates("cosine") == pytest.approx(expected)


def test_unknown_schedule_is_refused():
    with pytest.raises(ValueError, match="sft.schedule"):
        SFTConfig(schedule="linear")
