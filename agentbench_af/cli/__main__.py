"""`python -m agentbench_af.cli ...`, the same as `agentbench-af ...` (and what `torchrun -m` launches)."""

from agentbench_af.cli import app

if __name__ == "__main__":
    app()
