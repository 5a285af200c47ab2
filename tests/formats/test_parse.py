"""parse_response / find_spans: hand-worked cases and properties on arbitrary text."""

from hypothesis import given, settings
from hypothesis import strategies as st

from agentbench_af.formats.parse import MAX_PARSE_CHARS, Span, find_spans, format_response, parse_response

FRAGMENTS = [
    "<think>",
    "</think>",
    "<answer>",
    "</answer>",
    "||",
    " ",
    "\n",
    "Up",
    "left",
    "x",
    "<",
    ">",
    "/",
]
tagged_text = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=4), max_size=30).map("".join)


def test_well_formed_offsets():
    text = "<think>abc</think><answer>Up</answer>"
    p = parse_response(text)
    assert p.reasoning == Span(7, 10) and p.answer == Span(26, 28)
    assert (p.reasoning_text, p.answer_text, p.actions, p.error) == ("abc", "Up", ("Up",), None)


def test_missing_closing_answer_is_a_span_but_invalid():
    assert find_spans("<answer>Up") == (None, Span(8, 10))
    p = parse_response("<answer>Up")
    assert p.error == "no <answer>...</answer> found" and p.actions == ()


def test_missing_closing_think_runs_to_the_answer():
    reasoning, answer = find_spans("<think>hmm<answer>Up</answer>")
    assert reasoning == Span(7, 10) and answer == Span(18, 20)
    assert find_spans("<think>only thinking") == (Span(7, 20), None)


def test_text_after_answer_and_second_answer_are_ignored():
    text = "<answer>Left</answer> and then <answer>Up</answer>"
    p = parse_response(text)
    assert p.answer == Span(8, 12) and p.actions == ("Left",) and p.error is None


def test_split_on_bars_and_normalise_whitespace():
    p = parse_response("<answer>  up   ||Left\n  Down ||  </answer>")
    assert p.actions == ("up", "Left Down") and p.error is None


def test_too_many_actions_keeps_them_but_errs():
    p = parse_response("<answer>Up || Up || Up</answer>", max_actions=2)
    assert p.actions == ("Up", "Up", "Up")
    assert p.error == "too many actions (3; at most 2 per turn)"
    assert parse_response("<answer>Up || Up</answer>", max_actions=2).error is None


def test_empty_and_separator_only_answers():
    assert parse_response("<answer></answer>").error == "the answer is empty"
    assert parse_response("<answer> || \n ||</answer>").error == "the answer is empty"


def test_non_text_and_too_long():
    assert parse_response(None).error == "response is not text"
    assert parse_response(b"<answer>Up</answer>").error == "response is not text"
    long = "<answer>Up</answer>" + "x" * MAX_PARSE_CHARS
    p = parse_response(long)
    assert (
        p.error is not None and "too long" in p.error and p.actions == () and len(p.text) == MAX_PARSE_CHARS
    )


def test_no_tags():
    assert find_spans("Up") == (None, None)
    assert parse_response("Up").error == "no <answer>...</answer> found"


def test_format_response_round_trip():
    p = parse_response(format_response("go down then right", ["Down", "Right"]), max_actions=2)
    assert (p.reasoning_text, p.actions, p.error) == ("go down then right", ("Down", "Right"), None)


def _check_parse(text: str, max_actions: int) -> None:
    p = parse_response(text, max_actions=max_actions)
    n = len(p.text)
    for span in (p.reasoning, p.answer):
        if span is not None:
            assert 0 <= span.start <= span.end <= n
    if p.answer is not None:
        assert "</answer>" not in p.answer_text
    if p.error is None:
        assert 1 <= len(p.actions) <= max_actions
    for a in p.actions:
        assert a and a == " ".join(a.split()) and "||" not in a


@settings(max_examples=300, derandomize=True, database=None)
@given(text=st.text(max_size=300), max_actions=st.integers(1, 4))
def test_arbitrary_text_never_raises(text, max_actions):
    _check_parse(text, max_actions)


@settings(max_examples=300, derandomize=True, database=None)
@given(text=tagged_text, max_actions=st.integers(1, 4))
def test_tag_soup_never_raises_and_offsets_in_bounds(text, max_actions):
    _check_parse(text, max_actions)
    reasoning, answer = find_spans(text)
    for span in (reasoning, answer):
        if span is not None:
            assert 0 <= span.start <= span.end <= len(text)
