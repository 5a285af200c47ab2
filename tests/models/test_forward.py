"""`score_batch` returns a scored copy of a sampled batch and leaves the batch it was given unchanged:
old log-probs and entropies are the training forward pass's on generated tokens (0 elsewhere), values come from a
value head (masked the same way), and a reference model equal to the policy gives equal log-probs."""

import copy
import dataclasses

import pytest
import torch

from agentbench_af.formats.chat import ChatFormat
from agentbench_af.models.forward import response_logprobs, score_batch, token_stats
from agentbench_af.models.tiny import build_tiny_policy
from agentbench_af.models.value import ValueHead
from agentbench_af.rollout.collect import collect_rollouts
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.rollout.to_batch import trajectories_to_batch
from agentbench_af.rollout.types import RolloutConfig


@pytest.fixture(scope="module")
def sampled(tok):
    lm = build_tiny_policy("tiny-0.12m", tok, seed=0).eval()
    chat = ChatFormat.from_tokenizer(tok)
    torch.manual_seed(0)
    trajs = collect_rollouts(TransformersEngine(lm, tok.pad_token_id), tok, chat, "FrozenLake-4x4-v0", [1, 2],
                             RolloutConfig(group_size=2, max_new_tokens=12),
                             env_kwargs={"max_turns": 2})
    return lm, trajectories_to_batch(trajs, "full", tok.pad_token_id)


def _snapshot(batch):
    return {f.name: (v.clone() if isinstance(v := getattr(batch, f.name), torch.Tensor) else v)
            for f in dataclasses.fields(batch)}


def test_score_batch_returns_a_scored_copy(sampled):
    lm, batch = sampled
    batch = dataclasses.replace(batch, old_logprobs=torch.full_like(batch.old_logprobs, 7.0))  # (B, T) sentinel
    before = _snapshot(batch)
    head = ValueHead(int(lm.config.hidden_size), seed=3)
    ref = copy.deepcopy(lm)
    scored = score_batch(lm, batch, 1.0, "cpu", value_head=head, ref_lm=ref)
    assert scored is not batch
    after = _snapshot(batch)
    assert all(torch.equal(before[k], after[k]) if isinstance(before[k], torch.Tensor) else before[k] is after[k]
               for k in before)  # the input is untouched
    with torch.no_grad():
        lp, _, values = token_stats(lm, batch.input_ids, batch.attention_mask, value_head=head, with_entropy=False)
    mask = batch.response_mask  # (B, T)
    assert torch.equal(scored.old_logprobs, lp * mask)
    with torch.no_grad():
        _, entropy, _ = token_stats(lm, batch.input_ids, batch.attention_mask)  # (B, T)
    assert torch.equal(scored.entropy, entropy * mask)  # the trainer's entropies replace the engine's
    assert torch.equal(scored.values, values * mask)
    assert torch.equal(scored.ref_logprobs, response_logprobs(ref, batch, 1.0, "cpu"))
    # the reference is a copy of the policy (its pass skips the entropy, so equal up to float rounding)
    assert torch.allclose(scored.ref_logprobs, scored.old_logprobs, rtol=0.0, atol=1e-5)
    assert bool((scored.old_logprobs[mask] < 0).all()) and bool((scored.old_logprobs[~mask] == 0).all())
    assert scored.input_ids is batch.input_ids and scored.roles is batch.roles  # the rest is shared, not copied


def test_without_value_head_or_reference_those_fields_are_kept(sampled):
    lm, batch = sampled
    scored = score_batch(lm, batch, 0.7, "cpu")
    assert scored.values is batch.values and scored.ref_logprobs is batch.ref_logprobs
    assert torch.equal(scored.old_logprobs, response_logprobs(lm, batch, 0.7, "cpu"))


@pytest.mark.parametrize("max_rows", [1, 3])
def test_scoring_in_chunks_of_rows_matches_one_forward(sampled, max_rows):
    lm, batch = sampled
    assert batch.batch_size == 4 and max_rows < batch.batch_size
    head = ValueHead(int(lm.config.hidden_size), seed=3)
    ref = copy.deepcopy(lm)
    whole = score_batch(lm, batch, 0.7, "cpu", value_head=head, ref_lm=ref)
    chunked = score_batch(lm, batch, 0.7, "cpu", value_head=head, ref_lm=ref, max_rows=max_rows)
    for name in ("old_logprobs", "entropy", "values", "ref_logprobs"):
        a, b = getattr(whole, name), getattr(chunked, name)  # (B, T) each
        assert a.shape == b.shape and bool((b[~batch.response_mask] == 0).all())
        assert torch.allclose(a, b, rtol=0.0, atol=1e-5), name  # chunks are cropped: padding changes rounding only
    assert score_batch(lm, batch, 0.7, "cpu", max_rows=4).old_logprobs.equal(
        score_batch(lm, batch, 0.7, "cpu").old_logprobs)  # a chunk of every row is the one forward


def test_scoring_rejects_a_chunk_of_no_rows(sampled):
    lm, batch = sampled
    with pytest.raises(ValueError, match="max_rows must be >= 1"):
        score_batch(lm, batch, 1.0, "cpu", max_rows=0)
