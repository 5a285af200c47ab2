"""WebShop-v0 on the shipped catalogue: expert, pages, invalid actions, determinism, info."""

import re
import time
from functools import cache

import pytest

import agentbench_af
from agentbench_af.api.checker import expert_episode
from agentbench_af.environments.webshop.env import WebShopEnv
from agentbench_af.environments.webshop.variants import EVAL_GOALS, SHIPPED_GOALS
from agentbench_af.formats.parse import format_response


@cache
def env() -> WebShopEnv:
    return agentbench_af.make("WebShop-v0")  # the catalogue and its BM25 index are cached per process


def act(e: WebShopEnv, action: str):
    return e.step(format_response("test", [action]))


def play_to_expert_item(e: WebShopEnv, seed: int) -> None:
    """Follow the expert until it opens the item it will buy."""
    e.reset(seed=seed)
    while e.session.page != "item":
        act(e, e.expert_turn().actions[0])


def test_variant_limits_and_seed_split():
    e = env()
    v = e.variant
    assert (v.max_turns, v.max_actions_per_turn, v.max_actions_per_episode) == (15, 1, 15)
    assert v.eval_seeds == (0, EVAL_GOALS) and v.train_seeds == (EVAL_GOALS, SHIPPED_GOALS)
    assert len(e.catalogue.goals) == SHIPPED_GOALS and len(e.catalogue.products) >= 1000
    assert re.fullmatch(r"webshop-shipped-synthetic@[0-9a-f]{12}", e.catalogue_name)


def test_expert_strict_success_on_200_eval_seeds_within_the_turn_limit():
    e = env()
    t0 = time.perf_counter()
    for seed in range(200):
        success, total, turns, expert_turns = expert_episode(e, seed)
        assert success and total == 1.0 and e.score == 1.0, f"seed {seed}: score {e.score}"
        assert turns <= e.variant.max_turns
        assert all(t.reasoning and len(t.actions) == 1 for t in expert_turns)
    assert time.perf_counter() - t0 < 10.0


def test_expert_on_training_seeds():
    e = env()
    for seed in range(EVAL_GOALS, SHIPPED_GOALS, 37):
        assert expert_episode(e, seed)[0], f"seed {seed}"


def test_expert_searches_with_the_instruction_without_its_price():
    e = env()
    e.reset(seed=3)
    (action,) = e.expert_turn().actions
    assert action.startswith("search[") and "price lower than" not in action
    assert action[len("search[") : -1] in e.goal.instruction_text


def test_reset_is_deterministic_and_seeds_pick_goals():
    e = env()
    obs1, info1 = e.reset(seed=7)
    e.reset(seed=8)
    obs2, info2 = e.reset(seed=7)
    assert (obs1, info1) == (obs2, info2)
    assert e.goal is e.catalogue.goals[7]
    assert obs1 != e.reset(seed=8)[0]
    assert obs1.startswith("Instruction: ") and obs1.endswith("Available actions: search[<your query>]")
    with pytest.raises(ValueError):
        e.reset(seed=SHIPPED_GOALS)


def test_results_page_lists_ten_items_with_paging():
    e = env()
    e.reset(seed=0)
    obs, *_ = act(e, "search[shampoo]")
    lines = [ln for ln in obs.splitlines() if re.match(r"B0[A-Z0-9]{8} \| ", ln)]
    assert len(lines) == 10 and "page 1 of 5" in obs and len(obs) < 2000
    adm = e.admissible_actions()
    assert "click[Next >]" in adm and "click[< Prev]" not in adm and "click[Back to Search]" in adm
    first = e.session.results[0]
    obs, *_ = act(e, "click[next >]")  # case-insensitive
    assert e.session.result_page == 2 and "click[< Prev]" in e.admissible_actions()
    act(e, "click[< Prev]")
    assert e.session.result_page == 1
    act(e, f"click[{first.lower()}]")
    assert e.session.page == "item" and e.session.asin == first


def test_item_sub_pages_keep_options_and_prev_to_results_drops_them():
    e = env()
    play_to_expert_item(e, 11)
    group, value = e.goal.options[0]
    act(e, f"click[{value.upper()}]")
    assert e.session.options == {group: value}
    for sub in ("Description", "Features", "Reviews"):
        obs, reward, term, trunc, info = act(e, f"click[{sub}]")
        assert e.session.page == "item-sub" and f"Page: {sub.lower()} of item" in obs
        assert e.admissible_actions() == ["click[Back to Search]", "click[< Prev]"]
        act(e, "click[< Prev]")
        assert e.session.page == "item" and e.session.options == {group: value}
    act(e, "click[< Prev]")
    assert e.session.page == "results" and e.session.options == {}
    act(e, "click[Back to Search]")
    assert e.session.page == "search" and e.session.results == ()


def test_buying_ends_the_episode_and_a_wrong_option_costs_score():
    e = env()
    play_to_expert_item(e, 5)
    product = e.catalogue.by_asin[e.session.asin]
    group, value = e.goal.options[0]
    wrong = next(v for v in product.options[group] if v != value)
    act(e, f"click[{wrong}]")
    obs, reward, terminated, truncated, info = act(e, "click[Buy Now]")
    assert terminated and not truncated and not info["success"]
    assert 0.0 < reward < 1.0 and info["score"] == reward == e.score
    assert "Page: done." in obs and e.is_failure


def test_invalid_actions_get_the_format_penalty_and_change_nothing():
    e = env()
    e.reset(seed=2)
    cases_search_page = [
        "search[]",  # empty query
        "search[  ]",
        "search[a] | search[b]",  # two actions glued with a bad separator
        "click[Buy Now]",  # no such button on the search page
        "buy shampoo",  # neither search[...] nor click[...]
        "search shampoo",
    ]
    for text in [format_response("x", [a]) for a in cases_search_page] + ["I will search[shampoo] now"]:
        before = (e.render(), e.actions_left)
        obs, reward, terminated, truncated, info = e.step(text)
        assert not info["action_is_valid"] and info["invalid_reason"], text
        assert reward == e.variant.format_penalty and not terminated
        assert (e.render(), e.actions_left) == before and obs.startswith("Invalid: ")
    e.reset(seed=2)
    act(e, "search[shampoo]")
    for action in ("click[nothing here]", "search[shampoo]", "click[< Prev]", "click[Description]"):
        before = (e.render(), e.actions_left)
        _, reward, _, _, info = act(e, action)
        assert not info["action_is_valid"] and reward == e.variant.format_penalty, action
        assert (e.render(), e.actions_left) == before


def test_info_has_the_score_and_admissible_actions():
    e = env()
    _, info = e.reset(seed=1)
    assert info["score"] == 0.0 and info["admissible_actions"] == ["search[<your query>]"]
    _, _, _, _, info = act(e, "search[anything at all]")
    assert info["action_is_effective"] and info["score"] == 0.0
    assert info["admissible_actions"] == e.admissible_actions()


def test_turn_limit_truncates():
    e = env()
    e.reset(seed=4)
    for k in range(1, e.variant.max_turns + 1):
        _, _, terminated, truncated, _ = e.step("<answer></answer>")
        assert not terminated and truncated == (k == e.variant.max_turns)


def test_contract_checker_passes():
    from agentbench_af.api.checker import check_env

    report = check_env("WebShop-v0", n_malformed=300)
    assert report.expert_success_rate == 1.0


def test_expert_takes_the_first_result_that_scores_1_not_the_goals_own_listing():
    # seed 1 (socks, odor resistant + moisture wicking + arch support, gray, medium): the goal's own
    # product is the second result; the first also has the three attributes and both options
    e = env()
    e.reset(seed=1)
    act(e, e.expert_turn().actions[0])
    first, second = e.session.results[:2]
    assert second == e.goal.asin and e.expert_turn().actions == (f"click[{first}]",)
    while not e.session.page == "done":
        act(e, e.expert_turn().actions[0])
    assert e.session.asin == first and e.score == 1.0


def test_relabel_ids_renames_products_per_seed_and_changes_nothing_else():
    plain = agentbench_af.make("WebShop-mini-v0")
    renamed = agentbench_af.make("WebShop-mini-v0", relabel_ids=True)
    ids = re.compile(r"\bB\d{4}\b")
    for seed in (100, 101, 250):
        plain.reset(seed=seed)
        renamed.reset(seed=seed)
        act(plain, plain.expert_turn().actions[0])
        obs, *_ = act(renamed, renamed.expert_turn().actions[0])  # the same search
        assert plain.session.results == renamed.session.results
        listed = [line.split(" | ")[0] for line in obs.splitlines() if ids.match(line)]
        real = list(renamed.session.results[:10])
        assert listed == [renamed._label(a) for a in real] and listed != real  # every id renamed, order kept
        turn = renamed.expert_turn()  # the expert names the shown id of the real item it plans to open
        target = plain.expert_turn().actions[0][len("click["):-1]
        assert turn.actions == (f"click[{renamed._label(target)}]",) and renamed._label(target) in turn.reasoning
        if target not in listed:  # the real id is no button on the renamed page
            _, _, _, _, info = act(renamed, f"click[{target}]")
            assert not info["action_is_valid"] and renamed.session.page == "results"
        obs, *_ = act(renamed, turn.actions[0])
        assert renamed.session.asin == target and f"Page: item {renamed._label(target)}" in obs
    renamed.reset(seed=100)
    other = {a: renamed._label(a) for a in renamed.catalogue.by_asin}
    renamed.reset(seed=101)
    assert other != {a: renamed._label(a) for a in renamed.catalogue.by_asin}  # a new permutation per seed
    assert sorted(other.values()) == sorted(other)  # ... of the catalogue's own ids
    noisy = [agentbench_af.make("WebShop-mini-v0", relabel_ids=r, expert_action_noise=0.3) for r in (False, True)]
    for seed in range(100, 130):  # the noisy expert's episodes: same scores and lengths under the new names
        outcomes = []
        for e in noisy:
            _, _, turns, _ = expert_episode(e, seed)
            outcomes.append((e.score, turns))
        assert outcomes[0] == outcomes[1]


def test_each_draw_of_a_seed_gets_its_own_relabelling_and_draw_0_is_the_seeds_own():
    env = agentbench_af.make("WebShop-mini-v0", relabel_ids=True)
    assert env.draws_vary and not agentbench_af.make("WebShop-mini-v0").draws_vary

    def labels(**reset_kwargs):
        env.reset(seed=100, **reset_kwargs)
        return {a: env._label(a) for a in env.catalogue.by_asin}

    own = labels()
    assert labels(options={"draw": 0}) == own  # warm starts built before draws existed keep their ids
    first, second = labels(options={"draw": 1}), labels(options={"draw": 2})
    assert len({tuple(sorted(m.items())) for m in (own, first, second)}) == 3  # three permutations
    assert labels(options={"draw": 1}) == first  # a draw is a seed: the same every time
    assert sorted(first.values()) == sorted(first)  # still of the catalogue's own ids
    env.reset(seed=100, options={"draw": 1})
    assert env.goal is env.catalogue.goals[100]  # the goal is the seed's; only the names differ
    for bad in (-1, 1.5, "1", True):
        with pytest.raises(ValueError, match="reset option 'draw'"):
            env.reset(seed=100, options={"draw": bad})
