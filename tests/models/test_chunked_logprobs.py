"""The chunked log-prob/entropy path (`models.chunked_logprobs`, `token_stats` above `LOGITS_BYTES`) equals the
one-tensor computation: the formula by hand, chunks against one piece (values and gradients), and `token_stats` on
a small transformers Llama and on the tiny family (shared prompts, several turns, a value head); no projection
ever sees more than one chunk of hidden states, forward or backward."""

import math

import pytest
import torch
from llama_helpers import llama_batch, small_llama

from agentbench_af.formats.chat import ChatFormat
from agentbench_af.models import forward
from agentbench_af.models.chunked_logprobs import chunked_token_stats, logit_stats
from agentbench_af.models.forward import token_stats
from agentbench_af.models.tiny import build_tiny_policy
from agentbench_af.models.value import ValueHead
from agentbench_af.rollout.collect import collect_rollouts
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.rollout.to_batch import trajectories_to_batch
from agentbench_af.rollout.types import RolloutConfig


def test_logit_stats_by_hand():
    logits = torch.tensor([[0.0, math.log(3.0)]])  # p = (1/4, 3/4)
    lp, ent = logit_stats(logits, torch.tensor([1]), 1.0)
    assert lp.item() == pytest.approx(math.log(0.75), abs=1e-6)
    assert ent.item() == pytest.approx(-(0.25 * math.log(0.25) + 0.75 * math.log(0.75)), abs=1e-6)  # 0.5623
    lp, ent = logit_stats(logits, torch.tensor([0]), 2.0)  # logits / 2: p = (1, sqrt 3) / (1 + sqrt 3)
    p0 = 1 / (1 + math.sqrt(3))
    assert lp.item() == pytest.approx(math.log(p0), abs=1e-6)
    assert ent.item() == pytest.approx(-(p0 * math.log(p0) + (1 - p0) * math.log(1 - p0)), abs=1e-6)
    assert logit_stats(logits, torch.tensor([1]), 1.0, with_entropy=False)[1] is None


class CountingHead(torch.nn.Linear):
    """An output projection that records the most rows it was given in one call."""

    most = 0

    def forward(self, x):
        CountingHead.most = max(CountingHead.most, x.shape[0])
        return super().forward(x)


@pytest.mark.parametrize("chunk", [1, 3, 7, 50])
def test_chunks_equal_one_piece_with_gradients(chunk):
    torch.manual_seed(0)
    head = CountingHead(8, 11, bias=False)
    hidden = torch.randn(7, 8, requires_grad=True)
    targets = torch.randint(0, 11, (7,))
    lp_ref, ent_ref = logit_stats(head(hidden).float(), targets, 0.7)
    (lp_ref.sum() + 0.3 * ent_ref.sum()).backward()
    ref_grads = hidden.grad.clone(), head.weight.grad.clone()
    hidden.grad, head.weight.grad = None, None
    CountingHead.most = 0
    lp, ent = chunked_token_stats(hidden, head, targets, 0.7, chunk=chunk)
    (lp.sum() + 0.3 * ent.sum()).backward()
    assert CountingHead.most == min(chunk, 7)  # the backward recomputes one chunk at a time too
    torch.testing.assert_close(lp, lp_ref)
    torch.testing.assert_close(ent, ent_ref)
    torch.testing.assert_close(hidden.grad, ref_grads[0])
    torch.testing.assert_close(head.weight.grad, ref_grads[1])


def test_chunked_entropy_without_gradient_and_bad_input():
    head = torch.nn.Linear(4, 5, bias=False)
    hidden = torch.randn(6, 4, requires_grad=True)
    targets = torch.randint(0, 5, (6,))
    lp, ent = chunked_token_stats(hidden, head, targets, entropy_grad=False, chunk=4)
    assert lp.requires_grad and not ent.requires_grad
    assert chunked_token_stats(hidden, head, targets, with_entropy=False, chunk=4)[1] is None
    with torch.no_grad():
        lp2, _ = chunked_token_stats(hidden, head, targets, chunk=2)
    torch.testing.assert_close(lp2, lp.detach())
    with pytest.raises(ValueError, match="chunk must be >= 1"):
        chunked_token_stats(hidden, head, targets, chunk=0)
    with pytest.raises(ValueError, match="6 hidden states for 5 targets"):
        chunked_token_stats(hidden, head, targets[:5])


@pytest.fixture
def chunked(monkeypatch):
    """Every `token_stats` call with a response mask takes the chunked path, 5 tokens per chunk."""
    monkeypatch.setattr(forward, "LOGITS_BYTES", 0)
    monkeypatch.setattr(forward, "CHUNK_BYTES", 5 * 4 * 97)


def _stats_and_grads(lm, ids, attention, response, value_head=None):
    lp, ent, values = token_stats(lm, ids, attention, 0.8, value_head=value_head, response_mask=response)
    loss = (lp * response).sum() + 0.1 * (ent * response).sum()
    if values is not None:
        loss = loss + (values * response).pow(2).sum()
    lm.zero_grad()
    loss.backward()
    grads = [p.grad.clone() for p in lm.parameters()]
    lm.zero_grad()
    return lp.detach(), ent.detach(), None if values is None else values.detach(), grads


def _assert_same_at_generated(one, many, response):
    lp1, ent1, v1, g1 = one
    lp2, ent2, v2, g2 = many
    torch.testing.assert_close(lp2[response], lp1[response], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ent2[response], ent1[response], rtol=1e-5, atol=1e-5)
    assert not lp2[~response].any() and not ent2[~response].any()  # exactly 0 at every other position
    if v1 is not None:
        torch.testing.assert_close(v2, v1, rtol=1e-5, atol=1e-6)
    for a, b in zip(g2, g1, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("with_value_head", [False, True])
def test_token_stats_chunked_equals_one_tensor_on_a_small_llama(monkeypatch, with_value_head):
    lm = small_llama().train()
    ids, attention, response = llama_batch()
    head = ValueHead(32, seed=0) if with_value_head else None
    one = _stats_and_grads(lm, ids, attention, response, head)
    monkeypatch.setattr(forward, "LOGITS_BYTES", 0)
    monkeypatch.setattr(forward, "CHUNK_BYTES", 5 * 4 * 97)
    calls: list[int] = []
    projection = lm.get_output_embeddings()
    hook = projection.register_forward_hook(lambda _m, args, _out: calls.append(args[0].shape[0]))
    many = _stats_and_grads(lm, ids, attention, response, head)
    hook.remove()
    assert max(calls) == 5 and sum(calls) == 2 * int(response[:, 1:].sum())  # forward chunks + their recompute
    _assert_same_at_generated(one, many, response)


def test_chunked_path_runs_the_shared_prompt_once(chunked):
    lm = small_llama().eval()
    ids, attention, response = llama_batch()
    rows: list[int] = []
    hook = lm.get_decoder().register_forward_hook(lambda _m, _a, kwargs, _out: rows.append(kwargs["input_ids"].shape[0]),
                                                  with_kwargs=True)
    with torch.no_grad():
        token_stats(lm, ids, attention, 1.0, response_mask=response)
    hook.remove()
    assert rows == [3, 6]  # the 3 distinct prompts once, then every row's continuation


def test_small_logits_take_the_one_tensor_path_bit_for_bit():
    lm = small_llama().eval()
    ids, attention, response = llama_batch()
    with torch.no_grad():
        lp, ent, _ = token_stats(lm, ids, attention, 0.8, response_mask=response)
        cols = response[:, 1:].any(0).nonzero().squeeze(-1)
        logits = lm(input_ids=ids, attention_mask=attention,
                    position_ids=(attention.cumsum(-1) - 1).clamp(min=0)).logits[:, cols].float()  # (B, K, V)
    assert forward._chunked(lm, 6, cols.numel()) is False  # 6 x K x 97 floats: far below LOGITS_BYTES
    # the union columns are filled in every row (not only where the row generated): the one-tensor path
    assert lp[:, cols + 1].ne(0).all()
    expected, _ = logit_stats(logits, ids[:, cols + 1], 0.8)
    torch.testing.assert_close(lp[:, cols + 1], expected, rtol=1e-5, atol=1e-5)
    assert ent is not None


def test_wrapped_or_small_models_keep_the_one_tensor_path():
    lm = small_llama()
    assert forward._chunked(lm, 10**6, 10**3) is True
    assert forward._chunked(torch.nn.Linear(2, 2), 10**6, 10**3) is False  # not a transformers model


@pytest.fixture(scope="module")
def tiny_sampled(tok):
    lm = build_tiny_policy("tiny-0.12m", tok, seed=0)
    chat = ChatFormat.from_tokenizer(tok)
    torch.manual_seed(0)
    trajs = collect_rollouts(TransformersEngine(lm, tok.pad_token_id), tok, chat, "FrozenLake-4x4-v0", [1, 2],
                             RolloutConfig(group_size=2, max_new_tokens=12), env_kwargs={"max_turns": 2})
    return lm, trajectories_to_batch(trajs, "full", tok.pad_token_id)


def test_token_stats_chunked_equals_one_tensor_on_the_tiny_family(tiny_sampled, monkeypatch):
    lm, b = tiny_sampled
    lm.train()
    mask = b.response_mask.bool()
    assert int(b.turn_index.max()) >= 1  # several turns
    one = _stats_and_grads(lm, b.input_ids, b.attention_mask, mask)
    monkeypatch.setattr(forward, "LOGITS_BYTES", 0)
    monkeypatch.setattr(forward, "CHUNK_BYTES", 7 * 4 * lm.config.vocab_size)
    many = _stats_and_grads(lm, b.input_ids, b.attention_mask, mask)
    _assert_same_at_generated(one, many, mask)
    lm.eval()
