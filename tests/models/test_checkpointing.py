"""`model.gradient_checkpointing` (`models.checkpointing`): the decoder layers are recomputed in the backward pass,
the gradients equal those without it (bit for bit on the plain forward; to float tolerance on the update's forward,
which still runs each shared prompt once, through a cache a recomputed layer can replay), and a model without
support is refused."""

import pytest
import torch
from llama_helpers import llama_batch, small_llama

from agentbench_af.models import forward
from agentbench_af.models.checkpointing import enable_checkpointing, is_checkpointing, recomputes
from agentbench_af.models.forward import token_stats


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


def _count_layer_runs(lm):
    """(rows of each decoder forward, rows of each run of layer 0's MLP: forward and recomputation)."""
    rows: list[int] = []
    mlp_rows: list[int] = []
    lm.get_decoder().register_forward_hook(lambda _m, _a, kwargs, _o: rows.append(kwargs["input_ids"].shape[0]),
                                           with_kwargs=True)
    mlp = lm.get_decoder().layers[0].mlp
    inner = mlp.forward  # (a module hook does not see the recomputation)
    mlp.forward = lambda x: (mlp_rows.append(x.shape[0]), inner(x))[1]
    return rows, mlp_rows


def _force_chunking(monkeypatch, chunk: bool) -> None:
    """With `chunk`, every forward takes the chunked log-prob path, a few rows' logits per chunk."""
    if chunk:
        monkeypatch.setattr(forward, "LOGITS_BYTES", 0)
        monkeypatch.setattr(forward, "CHUNK_BYTES", 4 * 4 * 97)


@pytest.mark.parametrize("chunk", [False, True])
def test_update_forward_under_checkpointing_keeps_the_shared_prompt_and_its_gradients(monkeypatch, chunk):
    _force_chunking(monkeypatch, chunk)
    ids, attention, response = llama_batch()
    plain = small_llama().train()
    assert not recomputes(plain)
    plain_rows, _ = _count_layer_runs(plain)
    lp, grads = _grads(plain, ids, attention, response)
    assert plain_rows == [3, 6]  # 3 distinct prompts once, then the 6 rows' continuations
    lm = enable_checkpointing(small_llama().train())
    assert recomputes(lm)
    rows, mlp_rows = _count_layer_runs(lm)
    lp2, grads2 = _grads(lm, ids, attention, response)
    assert rows == [3, 6]  # the shared prompt under checkpointing too: no fallback to 6 full rows
    assert mlp_rows == [3, 6, 6, 3]  # forward, then the backward recomputes the continuation and the prompt
    torch.testing.assert_close(lp2 * response, lp * response, rtol=1e-5, atol=1e-5)
    for a, b in zip(grads2, grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    with torch.no_grad():
        assert not recomputes(lm)  # scoring (no gradients) runs without recomputation


@pytest.mark.parametrize("chunk", [False, True])
def test_checkpointed_shared_prompt_equals_the_full_forward(monkeypatch, chunk):
    """The reference is the plain model's forward over every row in full (no cache at all)."""
    _force_chunking(monkeypatch, chunk)
    ids, attention, response = llama_batch()
    with monkeypatch.context() as patch:
        patch.setattr(forward, "shared_prefix_logits", lambda *a: None)
        patch.setattr(forward, "shared_prefix_hidden", lambda *a: None)
        plain = small_llama().train()
        full_rows, _ = _count_layer_runs(plain)
        lp, grads = _grads(plain, ids, attention, response)
        assert full_rows == [6]
    lm = enable_checkpointing(small_llama().train())
    rows, _ = _count_layer_runs(lm)
    lp2, grads2 = _grads(lm, ids, attention, response)
    assert rows == [3, 6]
    torch.testing.assert_close(lp2 * response, lp * response, rtol=1e-5, atol=1e-5)
    for a, b in zip(grads2, grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_lora_adapters_under_checkpointing_get_the_shared_prompt_gradients():
    from agentbench_af.models.lora import LoraSettings, add_lora

    ids, attention, response = llama_batch()

    def grads(lm):
        add_lora(lm, LoraSettings(rank=2, alpha=4), seed=0)
        for name, p in lm.named_parameters():
            if "lora_B" in name:
                torch.nn.init.normal_(p, std=0.1, generator=torch.Generator().manual_seed(3))  # B = 0 gives A no gradient
        rows, _ = _count_layer_runs(lm)
        lp, ent, _ = token_stats(lm, ids, attention, 1.0, response_mask=response)
        ((lp * response).sum() + 0.1 * (ent * response).sum()).backward()
        return rows, lp.detach(), {n: p.grad for n, p in lm.named_parameters() if p.requires_grad}

    rows, lp, plain = grads(small_llama().train())
    rows2, lp2, checkpointed = grads(enable_checkpointing(small_llama().train()))
    assert rows == rows2 == [3, 6]
    torch.testing.assert_close(lp2 * response, lp * response, rtol=1e-5, atol=1e-5)
    assert plain.keys() == checkpointed.keys() and len(plain) == 2 * 7 * 2  # A and B, 7 projections, 2 layers
    for name, grad in plain.items():
        assert grad.abs().sum() > 0
        torch.testing.assert_close(checkpointed[name], grad, rtol=1e-4, atol=1e-6)


def test_a_model_without_support_is_refused():
    with pytest.raises(ValueError, match="model.gradient_checkpointing=true needs a transformers model"):
        enable_checkpointing(torch.nn.Linear(2, 2))
