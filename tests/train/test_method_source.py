"""`method` is the single source of estimator and weighting: a conflicting explicit value is an error."""

import pytest

from agentbench_af.config import HASH_DROP, ConfigError, config_hash, read_config_mapping, to_dict
from agentbench_af.credit import CreditConfig
from agentbench_af.train.config import TrainConfig, parse_method, train_config_from_dict


@pytest.mark.parametrize(("method", "pair"), [("ppo", ("gae", "uniform")), ("grpo", ("grpo", "uniform")),
                                              ("rloo+actfocus", ("rloo", "actfocus")),
                                              ("gigpo+top-entropy", ("gigpo-step", "top-entropy"))])
def test_method_names_the_pair(method, pair):
    assert parse_method(method) == pair
    cfg = train_config_from_dict({"method": method})
    assert (cfg.credit.estimator, cfg.credit.weighting) == pair


@pytest.mark.parametrize(("overrides", "names"), [
    (["method=grpo+actfocus", "credit.weighting=uniform"], ("credit.weighting is 'uniform'", "'actfocus'")),
    (["method=grpo", "credit.weighting=actfocus"], ("credit.weighting is 'actfocus'", "'uniform'")),
    (["method=ppo", "credit.estimator=grpo"], ("credit.estimator is 'grpo'", "'gae'")),
])
def test_a_conflicting_explicit_value_is_an_error_naming_both(overrides, names):
    with pytest.raises(ConfigError) as info:
        train_config_from_dict(read_config_mapping(None, overrides))
    assert all(n in str(info.value) for n in names) and "\n" not in str(info.value)


def test_a_consistent_explicit_value_and_a_saved_config_load():
    cfg = train_config_from_dict(read_config_mapping(None, ["method=ppo+actfocus", "credit.estimator=gae"]))
    again = train_config_from_dict(to_dict(cfg))  # a saved config.yaml carries both; they agree
    assert again == cfg and config_hash(again) == config_hash(cfg)


def test_programmatic_conflict_is_an_error():
    with pytest.raises(ValueError, match="credit.weighting is 'actfocus' but method 'grpo'"):
        TrainConfig(method="grpo", credit=CreditConfig(weighting="actfocus"))


def test_new_fields_leave_the_config_hash_unchanged():
    """imports and run.report_to are not part of the experiment: hashes of earlier records still match."""
    plain = TrainConfig()
    extra = train_config_from_dict({"imports": ["json"], "run": {"report_to": ["tensorboard"]}})
    assert config_hash(extra) == config_hash(plain)
    # dropped from the hashed mapping, so a config hashes as it did before these fields existed (checked
    # against 19a1ef2's default config when they were added: b5c776b20eff both ways)
    assert {"imports", "run.report_to"} <= set(HASH_DROP)
