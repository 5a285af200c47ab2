"""Experiment recipes (YAML), installed as `agentbench_af.baselines`: `cpu/` and `paper/` hold training
configs, `presets/` the sweep specs that `agentbench-af reproduce --preset NAME` runs."""
