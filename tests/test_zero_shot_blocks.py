"""`benchmarks/smollm2_zero_shot.py --block N`: a cell played in kept blocks resumes at its block, and its
counts are the sum of its blocks' (a tiny policy stands in for SmolLM2)."""

from __future__ import annotations

import json

import bench_scripts  # noqa: F401  (first: it puts benchmarks/ on sys.path)
import pytest
import smollm2_zero_shot
import torch
from bench_scripts import ENV, tiny_policy

from agentbench_af.evaluate.evaluate import EvalCounts, eval_seeds, evaluate_policy
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.rollout.types import RolloutConfig


@pytest.fixture(scope="module")
def policy():
    return tiny_policy()


def test_a_kept_block_is_read_back_and_the_first_block_is_an_unblocked_call(policy, tmp_path, monkeypatch):
    engine = TransformersEngine(policy.lm, policy.pad_token_id, max_batch_size=4)
    rollout = RolloutConfig(max_new_tokens=16)
    seeds = eval_seeds(ENV, 4)
    path = tmp_path / "parts" / "cell-0.json"
    first = smollm2_zero_shot.play_block(engine, policy, ENV, 1.0, rollout, seeds, 0, path)
    torch.manual_seed(0)  # what an unblocked call of these 4 episodes plays
    _, trajs = evaluate_policy(engine, policy.tokenizer, policy.chat, ENV, 4, 1.0, rollout)
    assert first["counts"] == EvalCounts.of(trajs) and first["counts"].episodes == 4
    assert json.loads(path.read_text())["counts"]["episodes"] == 4

    class Played(Exception):
        pass

    def collector(*args, **kwargs):
        raise Played

    monkeypatch.setattr("agentbench_af.evaluate.evaluate.collect_rollouts", collector)
    again = smollm2_zero_shot.play_block(engine, policy, ENV, 1.0, rollout, seeds, 0, path)
    assert again["counts"] == first["counts"]  # read from its file, not played
    path.write_text('{"counts": {"episodes": 4')  # torn by a kill: played again
    with pytest.raises(Played):
        smollm2_zero_shot.play_block(engine, policy, ENV, 1.0, rollout, seeds, 0, path)
