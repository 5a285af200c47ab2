"""The vLLM engine against the transformers engine on one tiny policy (head dim 32, as vLLM's CPU
attention needs): greedy multi-turn rollouts give the same token ids before and after a training step
whose new weights are loaded into the running vLLM model in memory; sampled log-probs agree with the
trainer's forward pass; sampling is seeded by torch's generator. One vLLM engine for the module."""

import math
import sys

import bm25s  # noqa: F401  (loads numba and llvmlite's library, as WebShop's search does)
import pytest
import torch

from agentbench_af.models.forward import logprob_mismatch, score_batch
from agentbench_af.models.policy import build_policy
from agentbench_af.rollout.collect import collect_rollouts
from agentbench_af.rollout.engine import TransformersEngine, build_engine
from agentbench_af.rollout.to_batch import trajectories_to_batch
from agentbench_af.rollout.types import RolloutConfig, SamplingParams
from agentbench_af.train.config import EnvConfig, SFTConfig, TrainConfig
from agentbench_af.train.distributed.data_parallel import TrainModules
from agentbench_af.train.update.loss import LossConfig
from agentbench_af.train.update.ppo import Credit, UpdateSettings, ppo_update
from agentbench_af.train.warm.sft import sft_warm_start

pytestmark = pytest.mark.vllm

ENV = "FrozenLake-4x4-v0"
SEEDS = [0, 1, 2, 3]
GREEDY = RolloutConfig(group_size=1, temperature=0.0, max_new_tokens=48, max_context_tokens=1024)


@pytest.fixture(scope="module")
def policy():
    policy = build_policy("tiny-0.2m-h32", [ENV], vocab_size=512, tokenizer_episodes=10, seed=0)
    assert policy.lm.config.head_dim == 32
    cfg = TrainConfig(env=EnvConfig(id=ENV), sft=SFTConfig(steps=30, batch_size=8, lr=3e-3, warmup_steps=2, episodes=40))
    torch.manual_seed(0)
    sft_warm_start(policy.lm, policy.tokenizer, policy.chat, cfg, torch.device("cpu"))
    policy.lm.eval()
    return policy


@pytest.fixture(scope="module")
def engine(policy, vllm_available):
    engine = build_engine(GREEDY, policy.lm, policy.pad_token_id)  # not yet vllm: GREEDY names transformers
    assert isinstance(engine, TransformersEngine)
    cfg = RolloutConfig(engine="vllm", max_context_tokens=1024, vllm_memory_fraction=0.1, vllm_kv_cache_gib=0.25)
    # vLLM's start-up scan of every module failed on llvmlite's lazy library object ('_lib_fn_wrapper'):
    # the engine starts with it loaded, and it is back in sys.modules afterwards
    assert "llvmlite.binding.ffi" in sys.modules
    engine = build_engine(cfg, policy.lm, policy.pad_token_id, seed=0)
    assert "llvmlite.binding.ffi" in sys.modules
    yield engine
    engine.close()


def _rollouts(engine, policy, cfg=GREEDY):
    return collect_rollouts(engine, policy.tokenizer, policy.chat, ENV, SEEDS, cfg)


def _turns(trajs):
    return [[t.response_ids for t in tr.turns] for tr in trajs]


def _assert_same_greedy(policy, vllm_engine):
    reference = _rollouts(TransformersEngine(policy.lm, policy.pad_token_id), policy)
    got = _rollouts(vllm_engine, policy)
    assert _turns(got) == _turns(reference)
    assert sum(len(tr.turns) for tr in got) > len(SEEDS)  # multi-turn: later turns reuse vLLM's prefix cache
    for a, b in zip(got, reference, strict=True):
        for ta, tb in zip(a.turns, b.turns, strict=True):
            assert ta.context_ids == tb.context_ids and ta.roles == tb.roles
            assert torch.allclose(torch.tensor(ta.logprobs), torch.tensor(tb.logprobs), atol=1e-4)
            assert all(math.isnan(e) for e in ta.entropies)  # vLLM gives none: the trainer's forward does
    return reference


def test_greedy_rollouts_equal_before_and_after_a_training_step(policy, engine):
    before = _assert_same_greedy(policy, engine)
    # one GRPO-style update with a large step, then the new weights go into vLLM in memory
    torch.manual_seed(1)
    trajs = _rollouts(engine, policy, RolloutConfig(group_size=4, temperature=1.0, max_new_tokens=48,
                                                    max_context_tokens=1024))
    batch = score_batch(policy.lm, trajectories_to_batch(trajs, "full", policy.pad_token_id), 1.0, "cpu")
    advantages = torch.randn(batch.input_ids.shape, generator=torch.Generator().manual_seed(0))  # (B, T)
    weights = batch.response_mask.float()  # (B, T)
    optimizer = torch.optim.SGD(policy.lm.parameters(), lr=0.5)
    with engine.updating(policy.lm):
        ppo_update(TrainModules(policy.lm), optimizer, batch, Credit(advantages, advantages, weights),
                   UpdateSettings(LossConfig(), torch.device("cpu")), torch.Generator().manual_seed(0))
    policy.lm.eval()
    after = _assert_same_greedy(policy, engine)
    assert _turns(after) != _turns(before)  # the update changed what the policy says


def test_sampled_logprobs_match_the_trainer_and_sampling_is_seeded(policy, engine):
    cfg = RolloutConfig(group_size=4, temperature=1.0, max_new_tokens=48, max_context_tokens=1024)
    torch.manual_seed(7)
    first = _rollouts(engine, policy, cfg)
    torch.manual_seed(7)
    again = _rollouts(engine, policy, cfg)
    torch.manual_seed(8)
    other = _rollouts(engine, policy, cfg)
    assert _turns(first) == _turns(again) != _turns(other)
    sampled = trajectories_to_batch(first, "full", policy.pad_token_id)  # vLLM's log-probs, NaN entropies
    batch = score_batch(policy.lm, sampled, 1.0, "cpu")
    assert batch.response_mask.sum() > 50 and sampled.entropy[sampled.response_mask].isnan().all()
    assert logprob_mismatch(sampled.old_logprobs, batch.old_logprobs, batch.response_mask) < 1e-3
    assert torch.isfinite(batch.entropy).all() and (batch.entropy[batch.response_mask] > 0).all()


def test_stop_ids_and_the_token_limit(policy, engine):
    prompt = list(policy.chat.prefix_ids("You play a grid game.", "Turn 1:\nP _ _ G"))
    stop = list(policy.chat.end_of_turn_ids)
    params = SamplingParams(temperature=0.0, max_new_tokens=4)
    cut = engine.generate([prompt], params, stop)[0]
    full = engine.generate([prompt], SamplingParams(temperature=0.0, max_new_tokens=64), stop)[0]
    assert full.finished and full.token_ids[-1] in stop and not set(full.token_ids[:-1]) & set(stop)
    assert len(full.token_ids) > 4 and cut.token_ids == full.token_ids[:4] and not cut.finished
    assert len(cut.logprobs) == 4 and engine.generate([], params, stop) == []
    with pytest.raises(ValueError, match="cache_keys"):
        engine.generate([prompt], params, stop, cache_keys=[1, 2])
