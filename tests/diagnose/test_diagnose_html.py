"""The token page: escaping, shading, roles, turns, folding, bad input, and a real render in Chromium."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser

import numpy as np
import pytest
import torch
from diag_factory import Traj, Turn, demo_trajs, make_batch_and_texts

from agentbench_af.diagnose import token_contributions
from agentbench_af.diagnose.html import MAX_ALPHA, render_html, write_html

torch.set_num_threads(1)
CHROMIUM = "/usr/bin/chromium"


def demo(mode="full", **kw):
    batch, texts = make_batch_and_texts(demo_trajs(0, **kw), mode=mode, shuffle_seed=1)
    return batch, texts, token_contributions(batch, "old").abs()


def test_every_generated_token_is_drawn_with_its_role_and_shade():
    batch, texts, abs_c = demo()
    page = render_html(batch, abs_c, texts, prompt_fold=10_000)
    spans = re.findall(r'<span class="tok (\w)[^"]*" style="background:rgba\(214,39,40,([0-9.]+)\)"', page)
    assert len(spans) == int(batch.response_mask.sum())
    roles = {"r": 1, "a": 2, "f": 3}
    assert sorted(roles[r] for r, _ in spans) == sorted(batch.roles[batch.response_mask].tolist())
    alphas = [float(a) for _, a in spans]
    assert max(alphas) == pytest.approx(MAX_ALPHA)  # the 99th percentile and above: full shade
    assert min(alphas) == 0.0  # the skipped group (equal rewards)
    assert page.count("zero reward variance: skipped") == 1
    assert page.count('<section class="group') == 3
    assert page.count('class="turn-label">turn 0<') == page.count('class="turn-label">turn 1<') == 9


class TokenSpans(HTMLParser):
    """Collects (title, text) of every token span of a page."""

    def __init__(self):
        super().__init__()
        self.spans, self._open = [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "span" and a.get("class", "").startswith("tok "):
            self._open = [a["title"], ""]
        elif tag == "script":
            raise AssertionError("a <script> element in the page")

    def handle_data(self, data):
        if self._open is not None:
            self._open[1] += data

    def handle_endtag(self, tag):
        if tag == "span" and self._open is not None:
            self.spans.append(tuple(self._open))
            self._open = None


def test_text_is_escaped():
    nasty = ['<script>alert("x")</script>', "&amp;", "a<b", "\x00", "'q'"]
    trajs = [Traj(0, 1.0, [Turn("rarar", [1.0, 2.0, 0.5, 1.5, 1.0], 1, ["<b>prompt</b>", *nasty])]),
             Traj(0, 0.0, [Turn("a", [3.0], 1, ["\n", ">"])])]
    batch, texts = make_batch_and_texts(trajs)
    page = render_html(batch, token_contributions(batch).abs(), texts)
    parser = TokenSpans()
    parser.feed(page)
    shown = [text for _, text in parser.spans]
    assert shown == ['<script>alert("x")</script>', "&amp;", "a<b", "\\x00", "'q'", ">"]
    assert all(title.endswith(repr(s)) for (title, _), s in zip(parser.spans, nasty, strict=False))
    assert "&lt;b&gt;prompt&lt;/b&gt;" in page and "\u21b5\n" in page


def test_callable_token_texts_and_folding():
    batch, texts, abs_c = demo()
    vocab = {i: s for b, row in enumerate(texts) for i, s in zip(batch.input_ids[b].tolist(), row, strict=False)}
    page_list = render_html(batch, abs_c, texts)
    page_fn = render_html(batch, abs_c, lambda ids: [vocab[i] for i in ids])  # like convert_ids_to_tokens
    assert page_list == page_fn
    assert page_list.count('<details class="fold">') == 9  # the long system prompt of every rollout
    assert "<details" not in render_html(batch, abs_c, texts, prompt_fold=10_000)


def test_window_mode_groups_and_limits():
    batch, texts, abs_c = demo(mode="window")
    page = render_html(batch, abs_c, texts, groups=[1], max_rollouts=2)
    assert page.count('<section class="group') == 1 and "Group 1<" in page
    assert page.count('class="traj-head"') == 2 and page.count('class="sample-label"') == 4
    assert "1 of 3 groups shown" in page


def test_bad_input_is_a_clear_error():
    batch, texts, abs_c = demo()
    with pytest.raises(ValueError, match="shape"):
        render_html(batch, abs_c[:, :-1], texts)
    with pytest.raises(ValueError, match="entries"):
        render_html(batch, abs_c, [t[:3] for t in texts])
    with pytest.raises(ValueError, match="rows"):
        render_html(batch, abs_c, texts[:-1])
    with pytest.raises(ValueError, match="not in the batch"):
        render_html(batch, abs_c, texts, groups=[42])
    with pytest.raises(ValueError, match="non-finite"):
        render_html(batch, abs_c * float("nan"), texts)


@pytest.mark.chromium
def test_page_renders_in_chromium(tmp_path):
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {CHROMIUM} is missing: install Debian's chromium")
        pytest.skip(f"{CHROMIUM} not installed")
    from PIL import Image

    batch, texts, abs_c = demo()
    page = write_html(tmp_path / "tokens.html", batch, abs_c, texts)
    shot = tmp_path / "out.png"
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [shutil.which(CHROMIUM) or CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", f"--screenshot={shot}", "--window-size=1200,1600",
             page.resolve().as_uri()],
            check=True, timeout=90, capture_output=True,
        )
    image = Image.open(shot).convert("RGB")
    assert image.size == (1200, 1600)
    r, g, b = np.asarray(image, dtype=np.int32).transpose(2, 0, 1)
    red = int(((r > 180) & (g < 120) & (b < 120)).sum())  # fully shaded tokens
    green = int(((g > 130) & (r < 80) & (b < 80)).sum())  # action borders (#2ca02c)
    assert red > 200 and green > 50, (red, green)
