"""Shared helpers for the sweep tests: a tiny training budget and a fake completed record."""

from pathlib import Path

from agentbench_af.config import config_hash, to_dict
from agentbench_af.results.record import RunRecord

# A training budget that finishes in ~2 s on one core: 2 SFT steps, 1 RL step, 2 eval episodes.
TINY_BASE = {
    "sft": {"steps": 2, "episodes": 5, "batch_size": 4},
    "rl": {"steps": 1, "prompts_per_step": 2},
    "rollout": {"group_size": 2, "max_new_tokens": 16},
    "eval": {"episodes": 2},
    "model": {"name": "tiny-0.2m", "tokenizer_episodes": 5},
    "env": {"id": "FrozenLake-4x4-v0", "overrides": {"max_turns": 2}},
}


def fake_record(cfg, success: float = 0.5) -> RunRecord:
    """What `train` writes, without training: a completed record for `cfg`."""
    run_dir = Path(cfg.run.out_dir) / cfg.run_name
    run_dir.mkdir(parents=True, exist_ok=True)
    record = RunRecord(env_id=cfg.env.id, method=cfg.method, model=cfg.model.name, model_params=1, seed=cfg.run.seed,
                       config_hash=config_hash(cfg), config=to_dict(cfg), protocol={"eval_episodes": 2},
                       final_success=success, curve=[{"step": 0, "success": 0.0}, {"step": 1, "success": success}])
    record.save(run_dir)
    return record
