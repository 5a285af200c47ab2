"""`token_stats(..., response_mask=...)` computes logits only at the columns that predict a generated
token, and runs a prompt shared by several rows once (`models.shared_prefix`): the log-probs, entropies
and gradients at generated positions equal the full computation's, and every other position is 0
(multi-turn batch: generated tokens in several stretches per row)."""

import pytest
import torch
from train_helpers import sampled_batch

from agentbench_af.models.forward import _logit_columns, token_stats
from agentbench_af.models.shared_prefix import shared_prefix_length, shared_prefix_logits


@pytest.fixture(scope="module")
def policy_and_batch(warm_start):
    return sampled_batch(warm_start)


def test_the_kept_columns_are_those_before_a_generated_token():
    mask = torch.tensor([[0, 0, 1, 1, 0, 0], [0, 0, 0, 1, 0, 1]], dtype=torch.bool)
    assert _logit_columns(torch.nn.Linear(1, 1), mask) is None  # no `logits_to_keep` in its forward

    class WithKeep(torch.nn.Module):
        def forward(self, input_ids, logits_to_keep=0):
            return input_ids

    assert _logit_columns(WithKeep(), mask).tolist() == [1, 2, 4]


def test_response_logits_equal_the_full_computation(policy_and_batch):
    policy, b = policy_and_batch
    mask = b.response_mask
    assert int(b.turn_index.max()) >= 1  # several turns: the kept columns are not one stretch
    lm = policy.lm
    full_lp, full_ent, _ = token_stats(lm, b.input_ids, b.attention_mask, 0.7)
    (full_lp * mask).sum().backward()
    full_grads = [p.grad.clone() for p in lm.parameters()]
    lm.zero_grad()
    lp, ent, _ = token_stats(lm, b.input_ids, b.attention_mask, 0.7, response_mask=mask)
    (lp * mask).sum().backward()
    kept = torch.zeros_like(mask)
    kept[:, _logit_columns(lm, mask) + 1] = True
    assert not kept[:, 0].any() and not kept.all() and bool(kept[mask].all())  # the first prompt is left out
    torch.testing.assert_close(lp[kept], full_lp[kept], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ent[kept], full_ent[kept], rtol=1e-5, atol=1e-5)
    assert not lp[~kept].any() and not ent[~kept].any()
    for p, g in zip(lm.parameters(), full_grads, strict=True):
        torch.testing.assert_close(p.grad, g, rtol=1e-4, atol=1e-5)  # summation order differs
    lm.zero_grad()


def test_a_shared_prompt_runs_once_and_gives_the_full_logits(policy_and_batch):
    policy, b = policy_and_batch
    mask = b.response_mask
    found = shared_prefix_length(b.input_ids, b.attention_mask, mask)
    assert found is not None
    length, prefixes, inverse = found
    assert prefixes.shape[0] == 2 and inverse[0] == inverse[1] and inverse[2] == inverse[3] != inverse[0]  # seeds x 2
    assert length == int(mask.float().argmax(-1).min())
    lm, cols = policy.lm, _logit_columns(policy.lm, mask)
    positions = (b.attention_mask.long().cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        shared = shared_prefix_logits(lm, b.input_ids, b.attention_mask, positions, cols, mask)  # (B, K, V)
        full = lm(input_ids=b.input_ids, attention_mask=b.attention_mask.long(), position_ids=positions).logits
    assert shared is not None and shared.shape == (4, cols.numel(), full.shape[-1])
    torch.testing.assert_close(shared, full[:, cols], rtol=1e-4, atol=1e-5)
    # every row has its own prompt, or a row generated nothing: no sharing
    assert shared_prefix_length(b.input_ids[[0, 2]], b.attention_mask[[0, 2]], mask[[0, 2]]) is None
    no_response = mask.clone()
    no_response[1] = False
    assert shared_prefix_length(b.input_ids, b.attention_mask, no_response) is None
