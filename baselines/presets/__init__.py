"""YAML recipes (see baselines/README.md)."""
