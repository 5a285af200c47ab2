"""`sft.env_overrides`: variant fields for the warm start's demonstrations only (WebShop's `relabel_ids`)."""

from __future__ import annotations

import re

import pytest
import torch
from train_helpers import tiny_config

import agentbench_af.train.warm.sft as sft_module
from agentbench_af.config import ConfigError
from agentbench_af.models.policy import build_policy
from agentbench_af.train.config import demonstration_overrides
from agentbench_af.train.preflight import check_runnable
from agentbench_af.train.warm.demos import demonstration_trajectories
from agentbench_af.train.warm.warm_start import settings_key, warm_start_settings

WEBSHOP = "WebShop-mini-v0"
CLICKED_ID = re.compile(r"click\[(B\d{4})\]")


def test_unset_it_leaves_the_warm_start_key_as_it_was_set_it_makes_another(tmp_path):
    plain = tiny_config(tmp_path, WEBSHOP)
    relabelled = tiny_config(tmp_path, WEBSHOP, sft__env_overrides="{relabel_ids: true}")
    assert "env_overrides" not in warm_start_settings(plain)["sft"]  # keys of warm starts built before it stay
    assert settings_key(warm_start_settings(plain)) != settings_key(warm_start_settings(relabelled))
    assert demonstration_overrides(relabelled) == {"max_turns": 3, "relabel_ids": True}
    assert demonstration_overrides(plain) == {"max_turns": 3}


def test_an_unknown_field_is_a_config_error_naming_the_setting(tmp_path):
    with pytest.raises(ConfigError, match=r"sft\.env_overrides: .*relabel"):
        check_runnable(tiny_config(tmp_path, WEBSHOP, sft__env_overrides="{relabel: true}"))


def test_the_warm_start_demonstrates_with_them_and_evaluation_plays_without(tmp_path, monkeypatch):
    cfg = tiny_config(tmp_path, WEBSHOP, sft__env_overrides="{relabel_ids: true}", sft__steps=1,
                      sft__episodes=4)
    seen: list[dict] = []
    real_demos = sft_module.demonstration_trajectories

    def spy(env_id, seeds, tokenizer, chat, rollout_cfg, env_kwargs=None, draws=1):
        seen.append(dict(env_kwargs or {}))
        return real_demos(env_id, seeds, tokenizer, chat, rollout_cfg, env_kwargs, draws)

    monkeypatch.setattr(sft_module, "demonstration_trajectories", spy)
    policy = build_policy(cfg.model.name, [WEBSHOP], cfg.model.vocab_size, cfg.model.tokenizer_episodes, 0,
                          env_kwargs={WEBSHOP: cfg.env.overrides})
    sft_module.sft_warm_start(policy.lm, policy.tokenizer, policy.chat, cfg, torch.device("cpu"))
    assert seen == [{"max_turns": 3, "relabel_ids": True}]
    assert cfg.env.overrides == {"max_turns": 3}  # what evaluation and RL make

    # the demonstrations then click other ids than the real ones, the same items under their shown names
    clicks = {}
    for kwargs in ({"max_turns": 3}, {"max_turns": 3, "relabel_ids": True}):
        trajs = demonstration_trajectories(WEBSHOP, [100, 101, 102], policy.tokenizer, policy.chat, cfg.rollout,
                                           kwargs)
        clicks[bool(kwargs.get("relabel_ids"))] = [CLICKED_ID.findall(t.response_text) for tr in trajs
                                                  for t in tr.turns]
    assert [len(c) for c in clicks[False]] == [len(c) for c in clicks[True]]
    assert any(clicks[False]) and clicks[False] != clicks[True]


def test_demo_draws_unset_keeps_the_hash_and_key_set_it_makes_another(tmp_path):
    plain = tiny_config(tmp_path, WEBSHOP, sft__env_overrides="{relabel_ids: true}")
    drawn = tiny_config(tmp_path, WEBSHOP, sft__env_overrides="{relabel_ids: true}", sft__demo_draws=3)
    assert "demo_draws" not in warm_start_settings(plain)["sft"]
    assert settings_key(warm_start_settings(plain)) != settings_key(warm_start_settings(drawn))
    check_runnable(drawn)


@pytest.mark.parametrize("bad", [0, -2])
def test_demo_draws_below_1_is_a_config_error(tmp_path, bad):
    with pytest.raises(ConfigError, match=r"sft\.demo_draws must be an int >= 1"):
        tiny_config(tmp_path, WEBSHOP, sft__demo_draws=bad)


def test_demo_draws_where_every_draw_is_the_same_game_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"sft\.demo_draws: 2 draws of a seed are the same game on WebShop"):
        check_runnable(tiny_config(tmp_path, WEBSHOP, sft__demo_draws=2))  # no relabel_ids: ids as they are
    with pytest.raises(ConfigError, match=r"same game on FrozenLake"):
        check_runnable(tiny_config(tmp_path, "FrozenLake-4x4-v0", sft__demo_draws=2))


def test_each_draw_demonstrates_the_same_goal_under_other_ids(tmp_path):
    cfg = tiny_config(tmp_path, WEBSHOP)
    policy = build_policy(cfg.model.name, [WEBSHOP], cfg.model.vocab_size, cfg.model.tokenizer_episodes, 0,
                          env_kwargs={WEBSHOP: cfg.env.overrides})
    kwargs = {"max_turns": 3, "relabel_ids": True}
    trajs = demonstration_trajectories(WEBSHOP, [100, 101], policy.tokenizer, policy.chat, cfg.rollout, kwargs,
                                       draws=3)
    assert [(t.seed, t.group) for t in trajs] == [(100, 0), (100, 1), (100, 2), (101, 3), (101, 4), (101, 5)]
    once = demonstration_trajectories(WEBSHOP, [100, 101], policy.tokenizer, policy.chat, cfg.rollout, kwargs)
    assert [t.response_text for t in once[0].turns] == [t.response_text for t in trajs[0].turns]  # draw 0
    assert [t.response_text for t in once[1].turns] == [t.response_text for t in trajs[3].turns]
    for seed_draws in (trajs[:3], trajs[3:]):
        searches = {t.turns[0].response_text for t in seed_draws}
        clicked = {tuple(CLICKED_ID.findall(turn.response_text)) for t in seed_draws for turn in t.turns[1:2]}
        assert len(searches) == 1 and len(clicked) == 3  # one search, three names for the item it opens
    with pytest.raises(ValueError, match="same game"):
        demonstration_trajectories(WEBSHOP, [100], policy.tokenizer, policy.chat, cfg.rollout, {"max_turns": 3},
                                   draws=2)
