"""Find and load run records, and group them so that only seed-replicates are averaged together."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from agentbench_af.credit.method_label import label_of_config
from agentbench_af.results.record import RunRecord


def find_records(paths: Iterable[str | Path]) -> list[Path]:
    """Every `record.json` under the given directories (or the files themselves), sorted."""
    found: set[Path] = set()
    for p in paths:
        p = Path(p)
        if p.is_file() and p.name.endswith(".json"):
            found.add(p)
        elif p.is_dir():
            found.update(p.rglob("record.json"))
        else:
            raise FileNotFoundError(f"no such file or directory: {p}")
    return sorted(found)


INTEGER_COLUMNS = ("eval_episodes", "rl_steps", "group_size", "prompts_per_step", "sft_steps", "max_turns")


def records_frame(paths: Iterable[str | Path]) -> pd.DataFrame:
    """One row per record: env, model, method, seed, config hash, success, status, protocol fields, and the
    RL learning rate (`rl_lr`, from the record's config)."""
    rows = []
    for path in find_records(paths):
        r = RunRecord.load(path)
        rows.append(
            {
                "path": str(path),
                "env": r.env_id,
                "model": r.model,
                "model_params": r.model_params,
                "method": label_of_config({**r.config, "method": r.method}),  # e.g. grpo@gspo
                "seed": r.seed,
                "config_hash": r.config_hash,
                "final_success": r.final_success,
                "warm_start_success": r.warm_start_success,
                "final_greedy": r.final_metrics.get("greedy_success"),  # with eval.also_greedy, else None
                "warm_start_greedy": next((c.get("greedy_success") for c in r.curve if c.get("step") == 0), None),
                "status": r.status,
                "git_commit": r.git_commit,
                "error": r.error,
                "wall_time_s": r.wall_time_s,
                "cpu_time_s": r.cpu_time_s,
                "warm_key": (r.warm_start or {}).get("key"),  # the warm start's settings key
                "eval_episodes": r.protocol.get("eval_episodes"),
                "eval_temperature": r.protocol.get("eval_temperature"),
                "rl_steps": r.protocol.get("rl_steps"),
                "group_size": r.protocol.get("group_size"),
                "prompts_per_step": r.protocol.get("prompts_per_step"),
                "catalogue": r.protocol.get("catalogue"),
                "sft_steps": (r.config.get("sft") or {}).get("steps"),
                "rl_lr": (r.config.get("rl") or {}).get("lr"),  # None where the record's config lacks it
                "max_turns": r.protocol.get("max_turns"),
                "context_mode": r.protocol.get("context_mode"),
                "bottleneck": r.bottleneck,
            }
        )
    columns = ["path", "env", "model", "model_params", "method", "seed", "config_hash", "final_success",
               "warm_start_success", "final_greedy", "warm_start_greedy", "status", "git_commit", "error",
               "wall_time_s", "cpu_time_s", "warm_key", "eval_episodes", "eval_temperature", "rl_steps", "group_size", "prompts_per_step",
               "catalogue", "sft_steps", "rl_lr", "max_turns", "context_mode", "bottleneck"]
    frame = pd.DataFrame(rows, columns=columns)
    # nullable integers: a column with gaps (older records lack a field) stays integer, not 5.0
    return frame.astype({c: "Int64" for c in INTEGER_COLUMNS})
