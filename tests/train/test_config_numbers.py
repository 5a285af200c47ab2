"""Numbers written the way users type them on the command line parse as numbers."""

import pytest

from agentbench_af.config import ConfigError, load_config
from agentbench_af.train.config import TrainConfig


@pytest.mark.parametrize(("text", "value"), [("1e-5", 1e-5), ("2.0e-4", 2e-4), ("3E2", 300.0), (".5e1", 5.0),
                                             ("+1e-3", 1e-3), ("7", 7.0)])
def test_exponent_numbers_are_floats(text, value):
    cfg = load_config(TrainConfig, None, [f"rl.lr={text}"])
    assert cfg.rl.lr == pytest.approx(value)
    assert isinstance(cfg.rl.lr, float)


@pytest.mark.parametrize("text", ["e5", "1e", "fast", "1e-5x"])
def test_other_text_is_still_refused(text):
    with pytest.raises(ConfigError, match="rl.lr: expected a number"):
        load_config(TrainConfig, None, [f"rl.lr={text}"])
