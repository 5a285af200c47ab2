"""Maps the top-level `environments/` and `baselines/` folders to `agentbench_af.environments` and
`agentbench_af.baselines`, so `pip install .` (not only `-e`) carries the environments and the recipes.

Everything else lives in pyproject.toml; this file only lists packages, which pyproject cannot do
for a remapped folder.
"""

from setuptools import find_packages, setup

ENV_PACKAGES = ["agentbench_af.environments"] + [
    f"agentbench_af.environments.{name}" for name in find_packages("environments")
]

BASELINE_PACKAGES = ["agentbench_af.baselines"] + [
    f"agentbench_af.baselines.{name}" for name in find_packages("baselines")
]

setup(
    packages=find_packages(include=["agentbench_af", "agentbench_af.*"]) + ENV_PACKAGES + BASELINE_PACKAGES,
    package_dir={"agentbench_af.environments": "environments", "agentbench_af.baselines": "baselines"},
)
