"""Maps the top-level `environments/` folder to the `agentbench_af.environments` package.

Everything else lives in pyproject.toml; this file only lists packages, which pyproject cannot do
for a remapped folder.
"""

from setuptools import find_packages, setup

ENV_PACKAGES = ["agentbench_af.environments"] + [
    f"agentbench_af.environments.{name}" for name in find_packages("environments")
]

setup(
    packages=find_packages(include=["agentbench_af", "agentbench_af.*"]) + ENV_PACKAGES,
    package_dir={"agentbench_af.environments": "environments"},
)
