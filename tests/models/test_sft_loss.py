"""The SFT loss (`train.warm.sft.sft_loss`, through `models.forward.generated_logprobs`): below `LOGITS_BYTES`
it is the one-tensor forward over every position, bit for bit the loss before the chunked path existed;
above it (forced here on a small Llama), the masked chunked path gives the same loss and gradients to
float tolerance (rtol 1e-5 / atol 1e-6 on the loss, rtol 1e-4 / atol 1e-6 on each gradient), with and
without LoRA adapters; and a SmolLM2-sized batch takes the chunked path."""

import types

import pytest
import torch
from llama_helpers import llama_batch, small_llama

from agentbench_af.models import forward
from agentbench_af.models.forward import token_stats
from agentbench_af.models.lora import LoraSettings, add_lora, trainable_parameters
from agentbench_af.train.warm.sft import sft_loss


def _batch():
    ids, attention, response = llama_batch()
    return types.SimpleNamespace(input_ids=ids, attention_mask=attention, response_mask=response)


def _old_loss(lm, mb):
    """The SFT loss as it was written before `generated_logprobs`: every position's logits in one tensor."""
    logprobs, _, _ = token_stats(lm, mb.input_ids, mb.attention_mask, with_entropy=False)  # (b, t)
    mask = mb.response_mask.float()
    return -(logprobs * mask).sum() / mask.sum().clamp(min=1.0)


def _loss_and_grads(lm, mb, params):
    loss = sft_loss(lm, mb)
    grads = torch.autograd.grad(loss, params)
    return loss.detach(), grads


def test_below_the_threshold_the_loss_is_bit_identical_to_the_old_one():
    lm = small_llama().train()
    mb = _batch()
    assert not forward._chunked(lm, *mb.input_ids.shape)  # 6 x 18 x 97 floats
    params = list(lm.parameters())
    new_loss, new_grads = _loss_and_grads(lm, mb, params)
    old = _old_loss(lm, mb)
    old_grads = torch.autograd.grad(old, params)
    assert torch.equal(new_loss, old.detach())
    assert all(torch.equal(a, b) for a, b in zip(new_grads, old_grads, strict=True))


@pytest.mark.parametrize("lora", [False, True])
def test_the_chunked_loss_equals_the_one_tensor_loss(monkeypatch, lora):
    lm = small_llama().train()
    if lora:
        add_lora(lm, LoraSettings(4, 8), seed=0)
        with torch.no_grad():  # B != 0, so the adapters take part in the forward and A gets gradients
            for name, p in lm.named_parameters():
                if ".lora_B." in name:
                    p.normal_(0, 0.1, generator=torch.Generator().manual_seed(len(name)))
    params = trainable_parameters(lm)
    mb = _batch()
    one_loss, one_grads = _loss_and_grads(lm, mb, params)
    monkeypatch.setattr(forward, "LOGITS_BYTES", 0)
    monkeypatch.setattr(forward, "CHUNK_BYTES", 5 * 4 * 97)  # 5 tokens per chunk
    calls: list[int] = []
    hook = lm.get_output_embeddings().register_forward_hook(lambda _m, args, _out: calls.append(args[0].shape[0]))
    many_loss, many_grads = _loss_and_grads(lm, mb, params)
    hook.remove()
    assert calls and max(calls) == 5  # the chunked path ran, 5 hidden states per projection
    torch.testing.assert_close(many_loss, one_loss, rtol=1e-5, atol=1e-6)
    for a, b in zip(many_grads, one_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    assert any(g.abs().sum() > 0 for g in many_grads)


def _meta_llama(vocab: int):
    from transformers import LlamaConfig, LlamaForCausalLM

    with torch.device("meta"):  # no memory
        return LlamaForCausalLM(LlamaConfig(vocab_size=vocab, hidden_size=64, intermediate_size=128,
                                            num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2))


def test_a_smollm2_sized_batch_is_chunked_and_a_tiny_one_is_not():
    """16 rows x 255 predicting positions x 49,152 entries x 4 bytes = 802 MB of fp32 logits > LOGITS_BYTES
    (256 MiB = 268,435,456 B); the largest tiny-family SFT batch of the CPU presets, 64 x 2,047 x 512 x 4 =
    268,304,384 B, stays below it (the one-tensor path, unchanged)."""
    assert forward._chunked(_meta_llama(49152), 16, 255)
    assert not forward._chunked(_meta_llama(512), 64, 2047)
