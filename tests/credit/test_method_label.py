"""Method labels: the method plus its non-default update rule (`grpo@gspo`, `grpo+ar@lopti`), and back."""

import pytest

from agentbench_af.config import ConfigError
from agentbench_af.credit.method_label import label_of_config, method_label, split_label


def test_labels_name_each_non_default_update_setting_in_order():
    assert method_label("grpo") == "grpo"
    assert method_label("grpo", policy="gspo") == "grpo@gspo"
    assert method_label("grpo+ar", token_passes="lopti") == "grpo+ar@lopti"
    assert method_label("grpo+aepo", "aepo", "lopti", True) == "grpo+aepo@aepo@lopti@ds"
    assert label_of_config({"method": "grpo+steer", "loss": {"policy": "cispo"}, "rl": {}}) == "grpo+steer@cispo"
    assert label_of_config({"method": "ppo"}) == "ppo"  # a record written before the update-rule settings


@pytest.mark.parametrize("label", ["grpo", "grpo@gspo", "grpo+ar@lopti", "grpo@dr-grpo@ds", "grpo+aepo@aepo@lopti@ds"])
def test_a_label_splits_into_its_method_and_the_settings_that_give_it(label):
    method, overrides = split_label(label)
    settings = dict(o.split("=") for o in overrides)
    assert method_label(method, settings.get("loss.policy", "ppo-clip"), settings.get("rl.token_passes", "one"),
                        settings.get("rollout.dynamic_sampling") == "true") == label


def test_split_by_hand():
    assert split_label("grpo+ar@gspo@lopti") == ("grpo+ar", ["loss.policy=gspo", "rl.token_passes=lopti"])


@pytest.mark.parametrize("label, message", [
    ("grpo@lopti@gspo", "write it as 'grpo@gspo@lopti'"),
    ("grpo@gspo@cispo", "each at most once"),
    ("grpo@@gspo", "each at most once"),
    ("@gspo", "each at most once"),
    ("grpo@ds@ds", "each at most once"),
])
def test_bad_labels_are_one_line_errors(label, message):
    with pytest.raises(ConfigError, match=message):
        split_label(label)
