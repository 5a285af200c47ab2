"""Data parallelism: ranks and collectives (`ranks`), the DDP/FSDP2 wrap (`data_parallel`), credit and
evaluation over ranks, and one batch gathered from the ranks for the diagnostics."""
