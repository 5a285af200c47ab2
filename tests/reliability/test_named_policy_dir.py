"""`saved_run.named_policy_dir`: which folder `eval --policy` and the benchmark scripts load."""

from dataclasses import replace

from train_helpers import tiny_config

from agentbench_af.train.bookkeeping.saved_run import named_policy_dir


def _model_dir(path):
    path.mkdir(parents=True)
    (path / "policy.json").write_text("{}")
    return path


def test_final_policy_and_warm_start_by_hand(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    branched_from = _model_dir(tmp_path / "parent" / "warm_start")
    cfg = tiny_config(run)
    cfg_branched = replace(cfg, run=replace(cfg.run, init_from=str(branched_from)))
    assert named_policy_dir(run, cfg, "final_policy") == run / "final_policy"
    assert named_policy_dir(run, cfg, "warm_start") == run / "warm_start"  # neither is a model: the run's own name
    assert named_policy_dir(run, cfg_branched, "warm_start") == branched_from  # the warm start it branched from
    _model_dir(run / "warm_start")
    assert named_policy_dir(run, cfg_branched, "warm_start") == run / "warm_start"  # its own comes first
