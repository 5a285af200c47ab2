"""Fixed-seed behaviour check: short tiny-0.2m runs whose metrics rows and final weights must not change
under a refactor that claims to keep behaviour (bit for bit on one machine and thread count).

Cases (FrozenLake, one torch thread, a shared 30-step SFT warm start, 3 RL steps each):
- `grpo`: one epoch, one minibatch, one process (steps after the first take the on-policy shortcut);
- `grpo+actfocus`: the same with ActFocus weights (energy from the old log-probs);
- `ppo-2x2`: PPO with the detached value head, 2 epochs x 2 minibatches (the scoring pass is kept);
- `ppo-separate-kl`: PPO with a separate critic and a KL penalty (a reference model);
- `dp2-ppo` (with `--dp`): PPO on 2 gloo ranks under `torchrun` (DDP, global denominators).
Each case writes `<out>/<case>.json`: every metrics row without its wall-time keys, the record's curve,
and a SHA-256 of the final checkpoint's model and optimizer tensors.

    python benchmarks/behaviour_check.py run /tmp/before [--dp]
    python benchmarks/behaviour_check.py compare /tmp/before /tmp/after

Left out: GPU runs (bit-identity holds on one device type only) and the vLLM engine.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import typer

VOLATILE = ("time_rollout_s", "time_step_s")
CASES: dict[str, dict[str, object]] = {
    "grpo": {"method": "grpo"},
    "grpo+actfocus": {"method": "grpo+actfocus"},
    "ppo-2x2": {"method": "ppo", "rl.epochs": 2, "rl.minibatches": 2},
    "ppo-separate-kl": {"method": "ppo", "rl.critic": "separate", "loss.kl_coef": 0.05},
}
DP_CASE = "dp2-ppo"

app = typer.Typer(add_completion=False)


def overrides(out_dir: Path, **extra: object) -> list[str]:
    items: dict[str, object] = {
        "env.id": "FrozenLake-4x4-v0", "model.tokenizer_episodes": 10, "sft.steps": 30, "sft.lr": 3e-3,
        "sft.batch_size": 8, "sft.episodes": 40, "rl.steps": 3, "rl.prompts_per_step": 2, "rl.warmup_steps": 1,
        "rl.lr": 1e-3, "rollout.group_size": 4, "rollout.max_new_tokens": 48, "eval.episodes": 4, "eval.every": 2,
        "run.out_dir": str(out_dir), "run.threads": 1, "run.device": "cpu", "run.name": "run",
    }
    items.update(extra)
    return [f"{k}={v}" for k, v in items.items()]


def weights_hash(run_dir: Path) -> str:
    """SHA-256 over the last checkpoint's model and optimizer tensors (names sorted)."""
    from agentbench_af.train.bookkeeping.checkpoint import latest_checkpoint

    state = torch.load(latest_checkpoint(run_dir), map_location="cpu", weights_only=False)
    digest = hashlib.sha256()

    def walk(prefix: str, node: object) -> None:
        if isinstance(node, torch.Tensor):
            digest.update(prefix.encode())
            digest.update(node.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
        elif isinstance(node, dict):
            for key in sorted(node, key=str):
                walk(f"{prefix}.{key}", node[key])
        elif isinstance(node, (list, tuple)):
            for i, item in enumerate(node):
                walk(f"{prefix}[{i}]", item)
        else:
            digest.update(f"{prefix}={node!r}".encode())

    walk("model", state["model"])
    walk("optimizer", state["optimizer"])
    return digest.hexdigest()


def outcome(run_dir: Path) -> dict:
    from agentbench_af.io import read_jsonl

    rows = [{k: v for k, v in r.items() if k not in VOLATILE} for r in read_jsonl(run_dir / "metrics.jsonl")]
    record = json.loads((run_dir / "record.json").read_text())
    return {"rows": rows, "curve": record["curve"], "final_success": record["final_success"],
            "weights_sha256": weights_hash(run_dir)}


@app.command()
def run(out: Path, dp: bool = typer.Option(False, help="also run the 2-rank gloo case (torchrun)")) -> None:
    """Run every case, writing <out>/<case>.json."""
    from agentbench_af.config import load_config
    from agentbench_af.train.config import TrainConfig
    from agentbench_af.train.loop import prepare_warm_start, train

    torch.set_num_threads(1)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="behaviour-"))
    warm = prepare_warm_start(load_config(TrainConfig, None, overrides(work / "warm")), work / "warm" / "policy",
                              torch.device("cpu"), show_progress=False)
    for name, extra in CASES.items():
        cfg = load_config(TrainConfig, None, overrides(work / name, **extra, **{"run.init_from": str(warm)}))
        train(cfg, show_progress=False)
        (out / f"{name}.json").write_text(json.dumps(outcome(work / name / "run"), indent=1))
        print(name, "done", flush=True)
    if dp:
        args = overrides(work / DP_CASE, method="ppo", **{"run.init_from": str(warm)})
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                   "-m", "agentbench_af.cli", "train", *args, "--quiet"]
        subprocess.run(command, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=900)
        (out / f"{DP_CASE}.json").write_text(json.dumps(outcome(work / DP_CASE / "run"), indent=1))
        print(DP_CASE, "done", flush=True)


@app.command()
def compare(before: Path, after: Path,
            ignore: list[str] = typer.Option([], help="metric-key prefix to leave out (repeatable), e.g. a "
                                                      "metric family added since `before`: health/")) -> None:
    """Exit 1 unless every case's rows (less the `--ignore` keys), curve and weight hash are identical."""

    def kept(case: dict) -> dict:
        rows = [{k: v for k, v in r.items() if not any(k.startswith(p) for p in ignore)} for r in case["rows"]]
        return {**case, "rows": rows}

    failed = False
    for path in sorted(before.glob("*.json")):
        if not (after / path.name).exists():
            print(f"{path.stem:18s} MISSING in {after}")
            failed = True
            continue
        a, b = kept(json.loads(path.read_text())), kept(json.loads((after / path.name).read_text()))
        same = a == b
        failed |= not same
        print(f"{path.stem:18s} {'identical' if same else 'DIFFERENT'}  weights {a['weights_sha256'][:16]} "
              f"-> {b['weights_sha256'][:16]}")
        if not same:
            for i, (ra, rb) in enumerate(zip(a["rows"], b["rows"], strict=False)):
                diff = {k: (ra.get(k), rb.get(k)) for k in set(ra) | set(rb) if ra.get(k) != rb.get(k)}
                if diff:
                    print(f"  row {i}: {diff}")
    raise typer.Exit(1 if failed else 0)


if __name__ == "__main__":
    app()
