"""The engine's decoding loop: inverse-CDF draws follow the distribution, the nucleus cut by hand, and
dropping finished rows from the cache changes no output (greedy: equal to `model.generate`)."""

import math

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from agentbench_af.rollout import sampler
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.rollout.sampler import draw, nucleus
from agentbench_af.rollout.types import SamplingParams


def test_nucleus_hand_worked():
    # sorted .5 .3 .15 .05; mass before each: 0 .5 .8 .95; kept where before < .8: .5 and .3 -> .625 .375
    probs = torch.tensor([[0.15, 0.5, 0.05, 0.3]])
    assert nucleus(probs, 0.8).tolist()[0] == pytest.approx([0.0, 0.625, 0.0, 0.375])
    assert nucleus(probs, 1.0).tolist()[0] == pytest.approx(probs.tolist()[0])
    assert nucleus(probs, 0.1).tolist()[0] == pytest.approx([0.0, 1.0, 0.0, 0.0])  # the top token always stays


def test_draw_follows_the_tempered_distribution():
    logits = torch.log(torch.tensor([0.1, 0.2, 0.3, 0.4])).repeat(20_000, 1)  # (N, 4)
    torch.manual_seed(0)
    ids, logp, entropy = draw(logits, 1.0, 1.0)
    freq = torch.bincount(ids, minlength=4).float() / ids.numel()
    assert freq.tolist() == pytest.approx([0.1, 0.2, 0.3, 0.4], abs=0.01)
    assert torch.allclose(logp.exp(), torch.tensor([0.1, 0.2, 0.3, 0.4])[ids])
    assert float(entropy[0]) == pytest.approx(-sum(p * math.log(p) for p in (0.1, 0.2, 0.3, 0.4)), abs=1e-5)
    # temperature 2: p ~ sqrt(p0); greedy takes the argmax and reports temperature-1 statistics
    _, logp2, _ = draw(logits[:1], 2.0, 1.0)
    root = torch.tensor([0.1, 0.2, 0.3, 0.4]).sqrt()
    assert float(logp2.exp().sum()) <= 1.0 and torch.allclose(torch.log_softmax(logits[0] / 2, -1), torch.log(root / root.sum()))
    ids0, logp0, _ = draw(logits[:3], 0.0, 1.0)
    assert ids0.tolist() == [3, 3, 3] and logp0.exp().tolist() == pytest.approx([0.4] * 3)


def test_draw_with_top_p_never_samples_outside_the_nucleus():
    logits = torch.log(torch.tensor([0.05, 0.15, 0.3, 0.5])).repeat(5_000, 1)
    torch.manual_seed(1)
    ids, logp, _ = draw(logits, 1.0, 0.8)
    assert set(ids.tolist()) == {2, 3}
    assert torch.allclose(logp.exp(), torch.tensor([0.05, 0.15, 0.3, 0.5])[ids])  # recorded before the cut


def random_lm() -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, attn_implementation="sdpa")
    return LlamaForCausalLM(config).eval()


@pytest.mark.parametrize("compact_at", [1, 4, 10_000])  # never, default, at every finished row
def test_dropping_finished_rows_changes_nothing(monkeypatch, compact_at):
    lm = random_lm()  # random weights: greedy responses differ per prompt and stop at different steps
    generator = torch.Generator().manual_seed(1)
    prompts = [torch.randint(1, 48, (n,), generator=generator).tolist() for n in (3, 9, 5, 12, 7, 4)]
    params = SamplingParams(temperature=0.0, max_new_tokens=16)
    stop = [7, 11, 23]
    reference = TransformersEngine(lm, 0, static_cache=False).generate(prompts, params, stop)  # model.generate
    assert len({len(g.token_ids) for g in reference}) >= 3 and not all(g.finished for g in reference)
    monkeypatch.setattr(sampler, "COMPACT_AT", compact_at)
    calls = []
    original = sampler._keep_rows
    monkeypatch.setattr(sampler, "_keep_rows", lambda cache, keep: (calls.append(keep.numel()), original(cache, keep)))
    out = TransformersEngine(lm, 0, static_cache=True).generate(prompts, params, stop)
    for ref, got in zip(reference, out, strict=True):  # static cache + this loop == model.generate
        assert got.token_ids == ref.token_ids and got.finished == ref.finished
        assert got.logprobs == pytest.approx(ref.logprobs, abs=1e-4)
        assert got.entropies == pytest.approx(ref.entropies, abs=1e-4)
    assert bool(calls) == (compact_at > 1)  # 1: never (finished rows would have to be all rows)
