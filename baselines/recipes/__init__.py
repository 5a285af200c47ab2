"""Method-less settings files merged on top of a config: `agentbench-af train CONFIG.yaml baselines/recipes/dapo.yaml`."""
