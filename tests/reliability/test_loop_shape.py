"""The training loop reads top to bottom: `train()` is short, and the run's bookkeeping (run folder and
lock, warm start, device, checkpoints, metrics, record) is not written inline in it."""

import inspect

from agentbench_af.train import loop


def test_train_reads_top_to_bottom_in_well_under_80_lines():
    source, _ = inspect.getsourcelines(loop.train)  # the ranks and the run folder around the loop
    loop_source, _ = inspect.getsourcelines(loop._train)  # the loop itself (data-parallel, vLLM, on-policy)
    assert len(source) < 80, len(source)
    assert len(loop_source) < 80, len(loop_source)
    text = "".join(source + loop_source).replace(loop.train.__doc__, "")
    for inline in ("mkdir", "atomic_write", "config.yaml", "record.json", "load_checkpoint", "torch.optim",
                   "cuda", "yaml", "metrics.jsonl", "latest_checkpoint"):
        assert inline not in text, inline
