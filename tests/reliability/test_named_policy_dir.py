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


def test_load_for_play_reads_a_cuda_run_on_the_cpu_with_the_runs_threads(tmp_path):
    import torch

    from agentbench_af.models.policy import build_policy
    from agentbench_af.train.bookkeeping.saved_run import load_for_play

    run = tmp_path / "run"
    build_policy("tiny-0.2m", ["FrozenLake-4x4-v0"], vocab_size=512, tokenizer_episodes=10, seed=0).save(
        run / "final_policy")
    cfg = tiny_config(run)
    before = torch.get_num_threads()
    try:
        for threads in (0, 1):  # 0: torch's own count is left as it is
            torch.set_num_threads(2)
            gpu_run = replace(cfg, run=replace(cfg.run, device="cuda", threads=threads))
            policy, engine = load_for_play(run, gpu_run, "final_policy")
            assert torch.get_num_threads() == (2 if threads == 0 else 1)
            assert not policy.lm.training and next(policy.lm.parameters()).device.type == "cpu"
            assert engine is not None
    finally:
        torch.set_num_threads(before)
