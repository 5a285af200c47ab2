"""benchmarks/webshop_copy_probe.py: where a click on a results page lands, worked by hand."""

from __future__ import annotations

import bench_scripts  # noqa: F401  (puts benchmarks/ on sys.path)
from webshop_copy_probe import click_place, probe_namings

PAGE = ('Turn 2:\nInstruction: i need socks\nPage: results for "socks" (page 1 of 5, 50 items)\n'
        "B0708 | Noelle Socks | $20.00\nB0415 | Gaton Socks | $22.53\nB0282 | Karix Socks | $29.23\n")


def test_a_click_on_the_first_listed_id_another_listed_one_or_one_not_listed():
    assert click_place(PAGE, "<think>Item B0708 fits.</think><answer>click[B0708]</answer>") == "first result"
    assert click_place(PAGE, "<think>Item B0708 fits.</think><answer>click[B0282]</answer>") == "another listed result"
    assert click_place(PAGE, "<think>Item B0708 fits.</think><answer>click[B0465]</answer>") == "not on the page"


def test_the_id_in_the_reasoning_does_not_count_only_the_answers_click():
    assert click_place(PAGE, "<think>I click[B0708] maybe.</think><answer>click[B0999]</answer>") == "not on the page"
    assert click_place(PAGE, "<think>Item B0708 fits.</think><answer>click[Buy Now]</answer>") is None
    assert click_place(PAGE, "<answer>search[socks]</answer>") is None


def test_ids_before_the_results_page_are_not_listed():
    page = "Invalid: no button 'B0465' on the results page\n" + PAGE
    assert click_place(page, "<answer>click[B0465]</answer>") == "not on the page"
    assert click_place("Page: item B0708\n", "<answer>click[B0708]</answer>") == "not on the page"


def test_the_unseen_permutation_is_the_first_draw_past_the_demonstrations():
    relabel = {"relabel_ids": True}
    assert probe_namings(True, 1) == [("real ids", {}, None), ("the demonstrations' permutation (draw 0)", relabel, None),
                                      ("a permutation never seen (draw 1)", relabel, {"draw": 1})]
    assert probe_namings(True, 20)[1:] == [("a permutation its demonstrations showed (draw 0 of 0-19)", relabel, None),
                                           ("a permutation never seen (draw 20)", relabel, {"draw": 20})]
    assert probe_namings(False, 1)[1:] == [("a permutation never seen (draw 0)", relabel, None),
                                           ("a permutation never seen (draw 1)", relabel, {"draw": 1})]
