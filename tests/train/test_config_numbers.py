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


def test_read_yaml_mapping_gives_one_line_errors(tmp_path):
    from agentbench_af.config import read_yaml_mapping

    good = tmp_path / "good.yaml"
    good.write_text("rl:\n  steps: 3\n")
    assert read_yaml_mapping(good) == {"rl": {"steps": 3}}
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert read_yaml_mapping(empty) == {}
    cases = [
        (tmp_path / "missing.yaml", {}, "config file not found"),
        (tmp_path, {"what": "sweep spec"}, "sweep spec not found"),  # a folder is not a file
        (empty, {"empty_ok": False}, "top level must be a mapping"),
    ]
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    (tmp_path / "bad.yaml").write_text("a: [1, 2\n")
    (tmp_path / "binary.yaml").write_bytes(b"\xff\xfe\x00bad")
    cases += [(tmp_path / "list.yaml", {}, "top level must be a mapping"), (tmp_path / "bad.yaml", {}, "not valid YAML"),
              (tmp_path / "binary.yaml", {}, "cannot read")]
    for path, kwargs, message in cases:
        with pytest.raises(ConfigError, match=message) as info:
            read_yaml_mapping(path, **kwargs)
        assert "\n" not in str(info.value)
