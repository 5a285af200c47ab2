from pathlib import Path

import pytest
from record_helpers import write_record


@pytest.fixture
def records_dir(tmp_path) -> Path:
    """Two envs, three methods on tiny-0.2m, one method on tiny-0.7m, and one failed run.

    FrozenLake-4x4-v0 (success per seed):  ppo 0.25 0.25 0.5 | grpo 0.5 0.75 | grpo+actfocus 0.75 1.0
    FrozenLake-6x6-v0: grpo 0.25 (one seed) | grpo+actfocus 0.5 (one seed); tiny-0.7m grpo on 4x4: 0.875 0.875
    """
    root = tmp_path / "records"
    env4, env6 = "FrozenLake-4x4-v0", "FrozenLake-6x6-v0"
    for seed, s in enumerate([0.25, 0.25, 0.5]):
        write_record(root, env4, "ppo", seed, s, "aaaaaaaaaaaa")
    for seed, s in enumerate([0.5, 0.75]):
        write_record(root, env4, "grpo", seed, s, "bbbbbbbbbbbb")
    for seed, s in enumerate([0.75, 1.0]):
        write_record(root, env4, "grpo+actfocus", seed, s, "cccccccccccc")
    write_record(root, env6, "grpo", 0, 0.25, "dddddddddddd")
    write_record(root, env6, "grpo+actfocus", 0, 0.5, "eeeeeeeeeeee")
    for seed in (0, 1):
        write_record(root, env4, "grpo", seed, 0.875, "ffffffffffff", model="tiny-0.7m", params=660_000)
    write_record(root, env4, "rloo", 0, None, "999999999999", status="failed", error="ValueError: reward went NaN")
    return root
