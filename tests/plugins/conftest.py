"""The example plugin (examples/plugin) must be installed: `pip install -e examples/plugin --no-deps`
(scripts/test.sh does it). Without it these tests fail with that instruction rather than skipping."""

import importlib.util
import sys

import pytest
from plugin_paths import ROOT

sys.path.insert(0, str(ROOT / "tests" / "train"))  # the shared tiny-run helpers (train_helpers)


@pytest.fixture(scope="session", autouse=True)
def plugin_installed():
    if importlib.util.find_spec("agentbench_lightsout") is None:
        pytest.fail("the example plugin is not installed: pip install -e examples/plugin --no-deps", pytrace=False)
