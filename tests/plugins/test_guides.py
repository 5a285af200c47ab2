"""The guides' code is the example plugin's code: every python/toml block of docs/adding-*.md appears
verbatim in a file of examples/plugin (the built-ins' registration lines: in agentbench_af/credit)."""

import re

import pytest
from plugin_paths import PLUGIN, ROOT

GUIDES = ["adding-an-environment.md", "adding-a-credit-method.md"]
BLOCK = re.compile(r"```(python|toml)\n(.*?)\n```", re.S)


def _sources(folder, patterns=("*.py", "*.toml")):
    return [p.read_text() for pattern in patterns for p in folder.rglob(pattern)]


@pytest.mark.parametrize("guide", GUIDES)
def test_guide_code_blocks_are_the_plugin_code(guide):
    text = (ROOT / "docs" / guide).read_text()
    blocks = BLOCK.findall(text)
    assert len(blocks) >= 2
    plugin = _sources(PLUGIN)
    builtins = "\n".join(_sources(ROOT / "agentbench_af" / "credit"))
    for lang, code in blocks:
        in_plugin = any(code in source for source in plugin)
        lines_in_builtins = all(line in builtins.splitlines() for line in code.splitlines())
        assert in_plugin or lines_in_builtins, f"{guide}: a {lang} block is not in examples/plugin:\n{code[:300]}"


def test_guides_show_every_plugin_module():
    text = "".join((ROOT / "docs" / g).read_text() for g in GUIDES)
    for name in ("variants.py", "weighting.py", "policy_loss.py"):
        source = (PLUGIN / "agentbench_lightsout" / name).read_text().rstrip("\n")
        assert source in text, f"{name} is not shown whole in the guides"
    assert (PLUGIN / "agentbench_lightsout" / "env.py").read_text().split("class LightsOutEnv")[1] in text
