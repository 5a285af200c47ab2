import shutil

import pytest
import torch

from agentbench_af.models.hf import PretrainedNotFoundError, load_pretrained
from agentbench_af.models.tiny import build_tiny_policy
from agentbench_af.models.value import save_policy


@pytest.fixture(scope="module")
def saved(tok, tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny")
    model = build_tiny_policy("tiny-0.2m", tok, seed=1)
    save_policy(path, model, tok)
    return path, model


def _logits(model, tok):
    ids = torch.tensor([tok.encode("Turn 1:\nP _ _ G", add_special_tokens=False)])
    with torch.no_grad():
        return model(input_ids=ids).logits


def test_missing_hub_id_says_what_to_do(tmp_path):
    with pytest.raises(PretrainedNotFoundError) as info:
        load_pretrained("nobody/no-such-model", cache_dir=tmp_path)
    msg = str(info.value)
    assert "nobody/no-such-model" in msg and str(tmp_path) in msg
    assert "hf download" in msg and "HF_HOME" in msg and "save_pretrained" in msg
    assert isinstance(info.value, FileNotFoundError)


def test_missing_or_empty_directory(tmp_path):
    with pytest.raises(PretrainedNotFoundError, match="no directory"):
        load_pretrained(tmp_path / "absent")
    with pytest.raises(PretrainedNotFoundError, match="config.json"):
        load_pretrained(tmp_path)


def test_loads_a_local_directory(saved, tok):
    path, model = saved
    loaded, tok2 = load_pretrained(path)
    assert torch.allclose(_logits(loaded, tok2), _logits(model, tok))
    assert tok2.pad_token_id == tok.pad_token_id and tok2.chat_template


def test_loads_a_hub_id_from_a_local_cache(saved, tok, tmp_path):
    path, model = saved
    snapshot = tmp_path / "models--local--tiny" / "snapshots" / ("0" * 40)
    shutil.copytree(path, snapshot)
    (tmp_path / "models--local--tiny" / "refs").mkdir()
    (tmp_path / "models--local--tiny" / "refs" / "main").write_text("0" * 40)
    loaded, _ = load_pretrained("local/tiny", cache_dir=tmp_path, dtype=torch.float32)
    assert torch.allclose(_logits(loaded, tok), _logits(model, tok))


def test_needs_a_chat_template(saved, tmp_path):
    path, _ = saved
    shutil.copytree(path, tmp_path / "m")
    (tmp_path / "m" / "chat_template.jinja").unlink()
    with pytest.raises(ValueError, match="chat template"):
        load_pretrained(tmp_path / "m")
