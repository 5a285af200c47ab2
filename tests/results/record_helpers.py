"""Hand-made run records for the table and plot tests."""

from pathlib import Path

from agentbench_af.results.record import RunRecord

PROTOCOL = {"eval_episodes": 8, "eval_temperature": 0.0, "eval_seeds": [10000, 10008], "rl_steps": 10,
            "prompts_per_step": 4, "group_size": 4, "catalogue": None}


def write_record(root: Path, env: str, method: str, seed: int, success: float | None, config_hash: str = "c0ffee000001",
                 model: str = "tiny-0.2m", params: int = 200_000, status: str = "completed",
                 error: str | None = None, bottleneck: dict | None = None, lr: float | None = None) -> Path:
    """A hand-made record.json (what `train` writes) in its own run directory; `lr` sets config rl.lr."""
    curve = [{"step": 0, "success": 0.125}, {"step": 5, "success": 0.25}]
    if success is not None:
        curve.append({"step": 10, "success": success})
    config = {"rl": {"lr": lr}} if lr is not None else {}
    record = RunRecord(env_id=env, method=method, model=model, model_params=params, seed=seed, config_hash=config_hash,
                       config=config, protocol=PROTOCOL, final_success=success, warm_start_success=0.125, curve=curve,
                       status=status, error=error, bottleneck=bottleneck)
    return record.save(root / f"{env}-{method}-{model}-{config_hash}-s{seed}")


def write_success_record(root: Path, method: str, seed: int, success: float, greedy: float | None = None,
                         warm_greedy: float = 0.5, env: str = "FrozenLake-4x4-v0", lr: float | None = None) -> Path:
    """A record with a final success (and greedy success), warm start 0.25 (greedy `warm_greedy`); `lr` sets
    config rl.lr."""
    curve = [{"step": 0, "success": 0.25, **({"greedy_success": warm_greedy} if greedy is not None else {})},
             {"step": 8, "success": success}]
    final = {"success": success, **({"greedy_success": greedy} if greedy is not None else {})}
    record = RunRecord(env_id=env, method=method, model="tiny-0.2m", model_params=1, seed=seed,
                       config_hash=method[:4], config={"rl": {"lr": lr}} if lr is not None else {},
                       protocol={"eval_episodes": 8}, final_success=success,
                       final_metrics=final, warm_start_success=0.25, curve=curve)
    return record.save(root / f"{method}-s{seed}")
