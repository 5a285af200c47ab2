"""`model.gradient_checkpointing` (`models.checkpointing`): the decoder layers are recomputed in the backward pass,
the gradients equal those without it (bit for bit on the plain forward; to float tolerance on the update's forward,
which then runs every row in full instead of the shared prompt once), and a model without support is refused."""

import pytest
import torch
from llama_helpers import llama_batch, small_llama

from agentbench_af.models import forward
from agentbench_af.models.checkpointing import enable_checkpointing, is_checkpointing
from agentbench_af.models.forward import recomputes, token_stats


def _grads(lm, ids, attention, response=None):
    lp, ent, _ = token_stats(lm, ids, attention, 1.0, response_mask=response)
    weight = response if response is not None else attention
    lm.zero_grad()
    ((lp * weight).sum() + 0.1 * (ent * weight).sum()).backward()
    grads = [p.grad.clone() for p in lm.parameters()]
    lm.zero_grad()
    return lp.detach(), grads


def test_checkpointed_gradients_equal_the_plain_ones_bit_for_bit():
    ids, attention, _ = llama_batch()
    plain = small_llama().train()
    lp, grads = _grads(plain, ids, attention)
    lm = enable_checkpointing(small_llama().train())
    assert is_checkpointing(lm) and not is_checkpointing(plain)
    lp2, grads2 = _grads(lm, ids, attention)  # (that the backward recomputes: the next test)
    assert torch.equal(lp, lp2)
    for a, b in zip(grads2, grads, strict=True):
        assert torch.equal(a, b)


def test_recompute_happens_in_the_backward_pass():
    ids, attention, _ = llama_batch()
    lm = enable_checkpointing(small_llama().train())
    layer = lm.get_decoder().layers[0]
    runs: list[bool] = []
    inner = layer.mlp.forward
    layer.mlp.forward = lambda x: (runs.append(torch.is_grad_enabled()), inner(x))[1]
    lp, _, _ = token_stats(lm, ids, attention, 1.0)
    assert len(runs) == 1
    lp.sum().backward()
    assert len(runs) == 2  # run again by the backward pass
    lm.eval()
    with torch.no_grad():
        token_stats(lm, ids, attention, 1.0)
    assert len(runs) == 3  # no backward to come: no checkpoint


@pytest.mark.parametrize("chunk", [False, True])
def test_update_forward_under_checkpointing_equals_the_shared_prompt_forward(monkeypatch, chunk):
    if chunk:
        monkeypatch.setattr(forward, "LOGITS_BYTES", 0)
        monkeypatch.setattr(forward, "CHUNK_BYTES", 4 * 4 * 97)
    ids, attention, response = llama_batch()
    plain = small_llama().train()
    assert not recomputes(plain)
    lp, grads = _grads(plain, ids, attention, response)  # the shared prompt runs once
    lm = enable_checkpointing(small_llama().train())
    assert recomputes(lm)
    rows: list[int] = []
    lm.get_decoder().register_forward_hook(lambda _m, _a, kwargs, _o: rows.append(kwargs["input_ids"].shape[0]),
                                           with_kwargs=True)
    lp2, grads2 = _grads(lm, ids, attention, response)
    assert rows == [6]  # one forward over every row in full: transformers drops the cache in a recomputed layer
    torch.testing.assert_close(lp2 * response, lp * response, rtol=1e-5, atol=1e-5)
    for a, b in zip(grads2, grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    with torch.no_grad():
        assert not recomputes(lm)  # scoring (no gradients) keeps the shared prompt


def test_a_model_without_support_is_refused():
    with pytest.raises(ValueError, match="model.gradient_checkpointing=true needs a transformers model"):
        enable_checkpointing(torch.nn.Linear(2, 2))
