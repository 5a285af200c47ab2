"""A run's bookkeeping: progress, metrics rows and the run record (`record`), checkpoints, the run folder
(`run_folder`, and `rank_folder` for data-parallel runs) and reading a finished run (`saved_run`)."""
