"""Gradient accumulation (`rl.micro_batch_rows`, and `sft.micro_batch_rows` for the SFT step): a minibatch run as micro-batches, each loss aggregated
with the whole minibatch's denominator, gives the step of the one-forward update (checked with SGD, where
the step is the gradient itself), for every aggregation, with a critic and a KL term; refused where a
micro-batch would change the method."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from train_helpers import sampled_batch

from agentbench_af.config import config_hash
from agentbench_af.credit import CreditConfig, compute_token_weights
from agentbench_af.models.forward import token_stats
from agentbench_af.models.policy import Policy
from agentbench_af.train.config import RLConfig, TrainConfig
from agentbench_af.train.distributed.data_parallel import TrainModules
from agentbench_af.train.update.loss import LossConfig
from agentbench_af.train.update.ppo import Credit, UpdateSettings, ppo_update
from agentbench_af.train.warm.sft import sft_step
from agentbench_af.train.warm.warm_start import warm_start_settings

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def batch(warm_start):
    policy, b = sampled_batch(warm_start, seeds=(1, 2, 3))
    with torch.no_grad():
        old, _, _ = token_stats(policy.lm, b.input_ids, b.attention_mask, with_entropy=False)  # (B, T)
    noise = 0.05 * torch.randn(b.response_mask.shape, generator=torch.Generator().manual_seed(4))  # (B, T)
    return dataclasses.replace(b, old_logprobs=(old + noise) * b.response_mask,  # ratios away from 1
                               ref_logprobs=(old - noise) * b.response_mask)


def _update(warm_start, batch, micro_rows, loss, with_value=False):
    """(parameter change of one SGD step at lr 1, i.e. minus the clipped gradient; metrics)."""
    policy = Policy.load(warm_start)
    head = policy.ensure_value_head() if with_value else None
    params = list(policy.lm.parameters()) + (list(head.parameters()) if head is not None else [])
    before = [p.detach().clone() for p in params]
    b = batch
    if head is not None:
        with torch.no_grad():
            _, _, values = token_stats(policy.lm, b.input_ids, b.attention_mask, value_head=head, with_entropy=False)
        b = dataclasses.replace(b, values=values * b.response_mask)
    mask = b.response_mask
    adv = torch.randn(mask.shape, generator=torch.Generator().manual_seed(2)) * mask  # (B, T)
    returns = torch.randn(mask.shape, generator=torch.Generator().manual_seed(1)) * mask if with_value else None
    weights = compute_token_weights(b, CreditConfig(weighting="actfocus"))  # (B, T), not all 1
    s = UpdateSettings(loss, CPU, micro_batch_rows=micro_rows)
    metrics = ppo_update(TrainModules(policy.lm, head), torch.optim.SGD(params, lr=1.0), b,
                         Credit(adv, returns, weights), s, torch.Generator().manual_seed(0))
    return torch.cat([(p.detach() - q).reshape(-1) for p, q in zip(params, before, strict=True)]), metrics


@pytest.mark.parametrize("agg", ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"])
@pytest.mark.parametrize("with_value", [False, True])
def test_micro_batches_take_the_one_forward_step(warm_start, batch, agg, with_value):
    assert batch.batch_size == 6 and bool(batch.response_mask.any(-1).all())
    loss = LossConfig(agg=agg, kl_coef=0.1, max_grad_norm=1e9)  # no clipping: the step is the gradient
    whole, m_whole = _update(warm_start, batch, 0, loss, with_value)
    assert whole.abs().max() > 1e-4  # the step is not trivially 0
    for rows in (1, 4):  # six micro-batches of one row; one of four and one of two
        step, m = _update(warm_start, batch, rows, loss, with_value)
        gap = float((step - whole).abs().max())  # float rounding only: the sums run in another order
        assert gap <= 1e-4 * float(whole.abs().max()), (rows, gap)
        for key in ("pg_loss", "kl_ref", "grad_norm", "ratio_max", "clip_frac", "approx_kl", *(
                ("value_loss",) if with_value else ())):
            assert m[key] == pytest.approx(m_whole[key], rel=1e-4, abs=1e-7), key
    same, _ = _update(warm_start, batch, 6, loss, with_value)  # one micro-batch of every row: the plain step
    assert torch.equal(same, whole)


def test_a_policy_loss_with_batch_statistics_is_refused_in_micro_batches(warm_start, batch):
    loss = LossConfig(policy="clip-cov")
    with pytest.raises(ValueError, match="loss.policy=clip-cov takes a batch statistic"):
        _update(warm_start, batch, 2, loss)
    _update(warm_start, batch, 6, loss)  # no split: allowed


def test_the_config_checks_and_leaves_it_out_of_the_hash():
    with pytest.raises(ValueError, match="rl.micro_batch_rows must be >= 0"):
        RLConfig(micro_batch_rows=-1)
    with pytest.raises(ValueError, match="does not split Lopti"):
        RLConfig(micro_batch_rows=8, token_passes="lopti")
    plain = TrainConfig()
    micro = dataclasses.replace(plain, rl=dataclasses.replace(plain.rl, micro_batch_rows=16))
    assert config_hash(micro) == config_hash(plain)  # memory, not the experiment


def _sft_step(warm_start, batch, micro_rows):
    policy = Policy.load(warm_start)
    params = list(policy.lm.parameters())
    before = [p.detach().clone() for p in params]
    policy.lm.train()
    loss = sft_step(policy.lm, params, torch.optim.SGD(params, lr=1.0), batch, micro_rows)
    return torch.cat([(p.detach() - q).reshape(-1) for p, q in zip(params, before, strict=True)]), loss


def test_sft_micro_batches_take_the_one_forward_step(warm_start, batch):
    # clipped to norm 1 on both sides, so equal gradients give equal steps
    whole, loss = _sft_step(warm_start, batch, 0)
    assert whole.abs().max() > 1e-4
    for rows in (1, 4):
        step, micro_loss = _sft_step(warm_start, batch, rows)
        gap = float((step - whole).abs().max())
        assert gap <= 1e-4 * float(whole.abs().max()), (rows, gap)
        assert micro_loss == pytest.approx(loss, rel=1e-5)


def test_sft_micro_batches_keep_the_warm_start_key_and_the_hash():
    plain = TrainConfig()
    micro = dataclasses.replace(plain, sft=dataclasses.replace(plain.sft, micro_batch_rows=4))
    assert warm_start_settings(micro) == warm_start_settings(plain)
    assert config_hash(micro) == config_hash(plain)
    with pytest.raises(ValueError, match="sft.micro_batch_rows must be >= 0"):
        dataclasses.replace(plain.sft, micro_batch_rows=-2)
