import importlib.util
import os

import pytest


@pytest.fixture(scope="session")
def vllm_available():
    """vLLM tests run in CI (scripts/test.sh installs the vllm extra); elsewhere they need it installed."""
    if importlib.util.find_spec("vllm") is None:
        if os.environ.get("CI"):
            pytest.fail("vllm is not installed but CI is set: install the vllm extra (pip install -e '.[vllm]')")
        pytest.skip("vllm is not installed (pip install -e '.[vllm]')")
