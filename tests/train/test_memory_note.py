"""The note on one forward's logits memory before RL (`train/memory_note.py`), worked by hand."""

import dataclasses

from agentbench_af.train.config import TrainConfig
from agentbench_af.train.memory_note import logits_bytes, logits_memory_note


def _cfg(prompts: int = 8, group: int = 8, tokens: int = 2048, micro: int = 0) -> TrainConfig:
    cfg = TrainConfig()
    return dataclasses.replace(cfg, rl=dataclasses.replace(cfg.rl, prompts_per_step=prompts, micro_batch_rows=micro),
                               rollout=dataclasses.replace(cfg.rollout, group_size=group, max_context_tokens=tokens))


def test_logits_bytes_by_hand():
    assert logits_bytes(64, 2048, 49_152) == 25_769_803_776  # 64 x 2048 x 49152 x 4 bytes = 24 GiB


def test_a_large_vocabulary_gets_the_note_with_a_power_of_two():
    # one row: 2048 x 49152 x 4 bytes = 0.375 GiB, so 2 GiB hold 5 rows; the note suggests 4
    note = logits_memory_note(_cfg(), vocab=49_152)
    assert note is not None
    assert "64 rows of up to 2048 tokens" in note and "24.0 GiB" in note and "49,152" in note
    assert "rl.micro_batch_rows=4" in note


def test_a_row_larger_than_the_target_still_suggests_one_row():
    note = logits_memory_note(_cfg(tokens=16_384), vocab=49_152)  # 3 GiB a row
    assert note is not None and "rl.micro_batch_rows=1 " in note


def test_no_note_for_a_tiny_vocabulary_or_when_micro_batches_are_set():
    assert logits_memory_note(_cfg(), vocab=512) is None  # 0.25 GiB
    assert logits_memory_note(_cfg(micro=16), vocab=49_152) is None
    assert logits_memory_note(_cfg(prompts=2, group=4, tokens=1024), vocab=49_152) is None  # 1.5 GiB
