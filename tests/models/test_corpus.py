import pytest

from agentbench_af.api import make
from agentbench_af.formats.parse import parse_response
from agentbench_af.models.corpus import environment_corpus, expert_demonstrations, tokenizer_corpus_seeds


def test_demonstrations_replay_and_succeed():
    demos = expert_demonstrations("FrozenLake-4x4-v0", [3, 11, 12])
    assert [d.seed for d in demos] == [3, 11, 12]
    for demo in demos:
        assert demo.success and demo.total_reward == 1.0
        env = make("FrozenLake-4x4-v0")
        env.reset(seed=demo.seed)
        assert demo.system == env.system_prompt()
        for k, (user, response) in enumerate(demo.turns, start=1):
            assert user.startswith(f"Turn {k}:\n")
            parsed = parse_response(response, max_actions=env.variant.max_actions_per_turn)
            assert parsed.error is None and parsed.reasoning_text
        roles = [m["role"] for m in demo.messages()]
        assert roles == ["system"] + ["user", "assistant"] * len(demo.turns)


def test_corpus_is_deterministic_and_covers_every_kind_of_text():
    a = environment_corpus(["FrozenLake-4x4-v0", "FrozenLake-8x8-v0"], episodes_per_env=5, seed=1)
    assert a == environment_corpus(["FrozenLake-4x4-v0", "FrozenLake-8x8-v0"], episodes_per_env=5, seed=1)
    assert a != environment_corpus(["FrozenLake-4x4-v0", "FrozenLake-8x8-v0"], episodes_per_env=5, seed=2)
    assert sum(t == make("FrozenLake-4x4-v0").system_prompt() for t in a) == 5
    assert any(t.startswith("<think>") and t.endswith("</answer>") for t in a)
    assert any("Invalid: too many actions" in t for t in a)
    assert any("Invalid: no <answer>" in t for t in a)


def test_training_seeds_are_distinct_and_in_range():
    lo, hi = make("FrozenLake-4x4-v0").variant.train_seeds
    seeds = tokenizer_corpus_seeds("FrozenLake-4x4-v0", 50, seed=0)
    assert len(set(seeds)) == 50 and all(lo <= s < hi for s in seeds)
    assert seeds == tokenizer_corpus_seeds("FrozenLake-4x4-v0", 50, seed=0)


def test_corpus_rejects_zero_episodes():
    with pytest.raises(ValueError):
        environment_corpus(["FrozenLake-4x4-v0"], episodes_per_env=0)
