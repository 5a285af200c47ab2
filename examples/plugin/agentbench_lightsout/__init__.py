"""An example agentbench-af plugin, installed on its own (`pip install -e examples/plugin`).

- `variants.py` registers the `LightsOut-3x3-v0` environment ids (entry-point group
  `agentbench_af.environments`), `env.py` holds the game and its breadth-first-search expert.
- `weighting.py` registers the `last-action` token weighting (group `agentbench_af.credit`).
The guides docs/adding-an-environment.md and docs/adding-a-credit-method.md walk through this code.
"""
