"""A killed diagnostic resumes (`results.diagnose_checkpoint`): the checkpoint folder keeps the sampled batch
and each measured group's Gram matrices for one key, and a headline fed from it equals one measured in a single go."""

import json

import torch
from bigram import Bigram, planted_trajs
from diag_factory import make_batch

from agentbench_af.diagnose import headline as headline_module
from agentbench_af.diagnose.headline import compute_headline
from agentbench_af.results.diagnose_checkpoint import DiagnoseCheckpoint, weight_files


def test_a_key_keeps_its_folder_and_another_key_clears_it(tmp_path):
    folder = tmp_path / "ck"
    ck = DiagnoseCheckpoint.open(folder, {"model": "a", "seed": 1})
    assert (ck.resumed_groups, ck.resumed_batch) == (0, False) and ck.grams(0) is None and ck.batch() is None
    grams = {"action": torch.eye(3, dtype=torch.float64), "reasoning": torch.ones(3, 3, dtype=torch.float64)}
    ck.put(4, grams)
    batch = make_batch(planted_trajs(0, "action", n_groups=2, group_size=3))
    ck.save_batch(batch)
    again = DiagnoseCheckpoint.open(folder, {"seed": 1, "model": "a"})  # key order does not matter
    assert (again.resumed_groups, again.resumed_batch) == (1, True)
    assert torch.equal(again.grams(4)["reasoning"], grams["reasoning"]) and again.grams(3) is None
    assert torch.equal(again.batch().input_ids, batch.input_ids) and again.batch().roles.dtype == batch.roles.dtype
    (folder / "grams-5.pt").write_bytes(b"not a tensor file")  # a torn or foreign file: measured again
    assert again.grams(5) is None
    other = DiagnoseCheckpoint.open(folder, {"model": "a", "seed": 2})
    assert (other.resumed_groups, other.resumed_batch) == (0, False) and sorted(p.name for p in folder.iterdir()) == ["key.json"]
    assert json.loads((folder / "key.json").read_text()) == {"model": "a", "seed": 2}
    other.finish()
    assert not folder.exists()


def test_finished_chunks_are_kept_until_the_whole_batch_is(tmp_path):
    folder = tmp_path / "ck"
    ck = DiagnoseCheckpoint.open(folder, {"model": "a"})
    chunks = ck.chunks()
    part = make_batch(planted_trajs(0, "action", n_groups=2, group_size=3))
    assert chunks.get(0) is None
    chunks.put(0, part)
    (folder / "chunk-1.pt").write_bytes(b"torn")  # killed while writing: sampled again
    again = DiagnoseCheckpoint.open(folder, {"model": "a"})
    assert (again.resumed_batch, again.resumed_chunks) == (False, 2)
    assert torch.equal(again.chunks().get(0).input_ids, part.input_ids) and again.chunks().get(1) is None
    again.save_batch(part)
    assert sorted(p.name for p in folder.iterdir()) == ["batch.pt", "key.json"]  # the batch replaces its chunks


def test_weight_files_name_size_and_time(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"12345")
    (tmp_path / "adapter").mkdir()
    (tmp_path / "adapter" / "adapter_model.safetensors").write_bytes(b"12")
    (tmp_path / "config.json").write_text("{}")
    files = weight_files(tmp_path)
    assert [f[:2] for f in files] == [["adapter/adapter_model.safetensors", 2], ["model.safetensors", 5]]


class _Store:
    def __init__(self):
        self.kept, self.puts = {}, []

    def grams(self, group):
        return self.kept.get(group)

    def put(self, group, grams):
        self.kept[group] = grams
        self.puts.append(group)


def test_a_resumed_headline_equals_one_measured_at_once(monkeypatch):
    batch = make_batch(planted_trajs(0, "action", n_groups=6, group_size=4))
    lm = Bigram(int(batch.input_ids.max()) + 1, scale=0.3)
    whole = compute_headline(batch, lm, max_groups=4, resamples=50)
    store, seen = _Store(), []
    first = compute_headline(batch, lm, max_groups=2, resamples=50, grams=store, on_group=lambda d, n: seen.append((d, n)))
    assert seen == [(1, 2), (2, 2)] and len(store.puts) == 2
    calls = []
    real = headline_module.role_grams
    monkeypatch.setattr(headline_module, "role_grams", lambda *a, **k: calls.append(1) or real(*a, **k))
    resumed = compute_headline(batch, lm, max_groups=4, resamples=50, grams=store)
    assert len(calls) == 2 and len(store.puts) == 4  # only the two groups not measured before
    assert resumed.to_dict() == whole.to_dict() and first.n_groups_measured == 2
    # a kept matrix of the wrong size (another batch) is measured again, not trusted
    store.kept[store.puts[0]] = {k: torch.zeros(2, 2, dtype=torch.float64) for k in ("action", "reasoning")}
    assert compute_headline(batch, lm, max_groups=4, resamples=50, grams=store).to_dict() == whole.to_dict()
    assert len(calls) == 3
