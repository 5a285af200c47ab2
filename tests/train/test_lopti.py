"""Lopti (`rl.token_passes=lopti`, arXiv 2505.12929): two optimizer steps per minibatch, the tokens with
p_old < threshold first, then a fresh forward and the rest; worked by hand on a model whose logits are one
trained bias vector (every position predicts from the same two logits)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from agentbench_af.rollout.batch import RolloutBatch
from agentbench_af.train.config import RLConfig
from agentbench_af.train.distributed.data_parallel import TrainModules
from agentbench_af.train.update.loss import LossConfig
from agentbench_af.train.update.ppo import Credit, UpdateSettings, ppo_update

LN3 = math.log(3.0)


class BiasLM(torch.nn.Module):
    """Logits b (2,) at every position, whatever the context: p(1) = sigmoid(b1 - b0)."""

    def __init__(self, bias: list[float]) -> None:
        super().__init__()
        self.bias = torch.nn.Parameter(torch.tensor(bias))

    def forward(self, input_ids, attention_mask=None, position_ids=None, output_hidden_states=False, use_cache=False):
        return SimpleNamespace(logits=self.bias.expand(*input_ids.shape, 2))  # (B, T, 2)


def _batch(old_logprobs: list[float]) -> RolloutBatch:
    """One row [0, 1, 0]: tokens 1 and 0 generated (positions 1 and 2), advantage 1 on both."""
    ids = torch.tensor([[0, 1, 0]])
    mask = torch.tensor([[False, True, True]])
    zeros = torch.zeros(1, 3)
    return RolloutBatch(input_ids=ids, attention_mask=torch.ones(1, 3, dtype=torch.bool), response_mask=mask,
                        roles=torch.zeros(1, 3, dtype=torch.int8), old_logprobs=torch.tensor([[0.0, *old_logprobs]]),
                        entropy=zeros, token_rewards=zeros, turn_index=torch.tensor([[-1, 0, 0]]),
                        sample_traj=torch.tensor([0]), sample_order=torch.tensor([0]), traj_group=torch.tensor([0]),
                        traj_return=torch.tensor([1.0]), traj_success=torch.tensor([True]))


def _update(lopti: float | None, old_logprobs: list[float]) -> tuple[torch.Tensor, dict[str, float]]:
    lm = BiasLM([0.0, LN3])  # p(1) = 0.75, p(0) = 0.25
    optimizer = torch.optim.SGD(lm.parameters(), lr=1.0)
    credit = Credit(torch.tensor([[0.0, 1.0, 1.0]]), None, torch.tensor([[0.0, 1.0, 1.0]]))
    s = UpdateSettings(LossConfig(max_grad_norm=1e9), torch.device("cpu"), lopti_threshold=lopti)
    metrics = ppo_update(TrainModules(lm, None, None), optimizer, _batch(old_logprobs), credit, s, torch.Generator())
    return lm.bias.detach(), metrics


def test_lopti_steps_on_the_low_probability_token_then_on_the_rest():
    # old p: token 1 (position 1) 0.75, token 0 (position 2) 0.25 < 0.5: pass 1 holds token 0 alone.
    # pass 1: r = 1, loss -A r over 1 token, d loss / d log p0 = -1; d log p0 / d b = e_0 - p = [0.75, -0.75]:
    #   gradient [-0.75, 0.75], SGD (lr 1): b = [0.75, ln 3 - 0.75]
    # pass 2 (fresh forward): p(1) = sigmoid(ln 3 - 1.5) = 1 / (1 + e^1.5 / 3) = 0.400981, r = 0.400981 / 0.75
    #   = 0.534641 < 0.8 with A > 0: unclipped, d loss / d log p1 = -r; d log p1 / d b = e_1 - p = [-0.599019,
    #   0.599019]: gradient [0.320262, -0.320262], b = [0.75 - 0.320262, ln 3 - 0.75 + 0.320262]
    bias, metrics = _update(0.5, [math.log(0.75), math.log(0.25)])
    assert torch.allclose(bias, torch.tensor([0.429738, LN3 - 0.429738]), atol=1e-5)
    # metrics: the mean of the two passes; pg_loss (-1 - 0.534641) / 2
    assert metrics["lopti_low_share"] == pytest.approx(0.5)
    assert metrics["pg_loss"] == pytest.approx((-1.0 - 0.534641) / 2, abs=1e-5)


def test_one_pass_takes_one_step_on_both_tokens():
    # both tokens at r = 1, token-mean over 2: gradient -(e_0 - p + e_1 - p) / 2 = -([0.75, -0.75] + [-0.25, 0.25]) / 2
    #   = [-0.25, 0.25]: b = [0.25, ln 3 - 0.25]
    bias, metrics = _update(None, [math.log(0.75), math.log(0.25)])
    assert torch.allclose(bias, torch.tensor([0.25, LN3 - 0.25]), atol=1e-6)
    assert "lopti_low_share" not in metrics


def test_an_empty_pass_is_skipped():
    # old p 0.75 and 0.6 (as if sampled by another policy): no token below 0.5, so only the second pass runs,
    # on the forward before any step: r = [0.75 / 0.75, 0.25 / 0.6] = [1, 0.416667]; token 2 (A > 0, r < 0.8)
    # is unclipped: d loss / d log p = [-1, -0.416667] / 2; d log p / d b = e_1 - p = [-0.25, 0.25] and
    # e_0 - p = [0.75, -0.75]: gradient -(1 [-0.25, 0.25] + 0.416667 [0.75, -0.75]) / 2 = [-0.03125, 0.03125],
    # b = [0.03125, ln 3 - 0.03125]
    bias, metrics = _update(0.5, [math.log(0.75), math.log(0.6)])
    assert torch.allclose(bias, torch.tensor([0.03125, LN3 - 0.03125]), atol=1e-6)
    assert metrics["lopti_low_share"] == 0.0


def test_the_config_names_the_passes_and_checks_the_threshold():
    assert RLConfig().token_passes == "one"
    with pytest.raises(ValueError, match="rl.token_passes"):
        RLConfig(token_passes="two")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rl.lopti_threshold must lie in"):
        RLConfig(token_passes="lopti", lopti_threshold=1.0)
