import pytest
import torch

from agentbench_af.models.tiny import build_tiny_policy
from agentbench_af.models.value import VALUE_HEAD_FILE, PolicyWithValue, ValueHead, load_policy, save_policy


def _batch(tok):
    texts = ["<think>I go Down</think><answer>Down</answer>", "Turn 2:\nP _"]
    enc = [tok.encode(t, add_special_tokens=False) for t in texts]
    width = max(map(len, enc))
    ids = torch.full((2, width), tok.pad_token_id)  # (B, T)
    mask = torch.zeros((2, width), dtype=torch.long)  # (B, T)
    for i, e in enumerate(enc):
        ids[i, : len(e)] = torch.tensor(e)
        mask[i, : len(e)] = 1
    return ids, mask


def test_forward_shapes_and_logits_of_the_policy(tok):
    model = PolicyWithValue(build_tiny_policy("tiny-0.2m", tok, seed=0), seed=0)
    ids, mask = _batch(tok)
    logits, values = model(ids, mask)
    assert logits.shape == (*ids.shape, model.policy.config.vocab_size) and values.shape == ids.shape
    assert torch.allclose(logits, model.policy(input_ids=ids, attention_mask=mask).logits)
    # the head reads the last hidden state (after the final norm)
    hidden = model.policy.model(input_ids=ids, attention_mask=mask).last_hidden_state  # (B, T, H)
    assert torch.allclose(values, model.value_head(hidden).squeeze(-1))


def test_one_step_changes_every_parameter(tok):
    model = PolicyWithValue(build_tiny_policy("tiny-0.2m", tok, seed=0), seed=0)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    ids, mask = _batch(tok)
    logits, values = model(ids, mask)
    loss = torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten()) + values.pow(2).mean()
    (loss + (values - 1).pow(2).mean()).backward()
    torch.optim.SGD(model.parameters(), lr=0.1).step()
    unchanged = [n for n, p in model.named_parameters() if torch.equal(p, before[n])]
    assert unchanged == []


def test_value_head_init_is_seeded():
    assert torch.equal(ValueHead(8, seed=1).weight, ValueHead(8, seed=1).weight)
    assert not torch.equal(ValueHead(8, seed=1).weight, ValueHead(8, seed=2).weight)
    assert torch.count_nonzero(ValueHead(8, seed=1).bias) == 0


def test_save_and_load_round_trip(tok, tmp_path):
    model = PolicyWithValue(build_tiny_policy("tiny-0.2m", tok, seed=5), seed=5)
    with torch.no_grad():
        model.value_head.bias.fill_(0.25)  # something a fresh head would not have
    model.save_pretrained(tmp_path, tokenizer=tok)
    back = PolicyWithValue.from_pretrained(tmp_path)
    ids, mask = _batch(tok)
    with torch.no_grad():
        (l1, v1), (l2, v2) = model(ids, mask), back(ids, mask)
    assert torch.allclose(l1, l2) and torch.allclose(v1, v2)
    _, tok2, head = load_policy(tmp_path)
    assert tok2.get_vocab() == tok.get_vocab() and tok2.chat_template == tok.chat_template
    assert head is not None and float(head.bias.detach()) == 0.25
    assert back.policy.generation_config.top_k == 0


def test_saving_without_a_head_removes_a_stale_one(tok, tmp_path):
    model = build_tiny_policy("tiny-0.2m", tok, seed=0)
    save_policy(tmp_path, model, tok, ValueHead(64))
    save_policy(tmp_path, model, tok)
    assert not (tmp_path / VALUE_HEAD_FILE).exists()
    _, _, head = load_policy(tmp_path)
    assert head is None
    fresh = PolicyWithValue.from_pretrained(tmp_path, seed=7)
    assert torch.equal(fresh.value_head.weight, ValueHead(64, seed=7).weight)


def test_load_from_an_empty_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_policy(tmp_path)
