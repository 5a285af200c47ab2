"""The GPU check: every stage of `benchmarks/gpu_stages.py` in its own process with its own time limit,
inside one total budget; a failed or timed-out stage does not stop the others. Writes `gpu_check.json`
(every stage's figures), `gpu_check.md` (tables) and `gpu_check.log` (each stage's output) to `--out`.

    python benchmarks/gpu_check.py --out DIR                       # on a CUDA machine (docs/gpu.md)
    python benchmarks/gpu_check.py --out DIR --device cpu --tiny   # the CPU dry run (CI)
    python benchmarks/gpu_check.py --out DIR --stages paper,nccl-fsdp2 --budget-s 240   # a rerun of some

A stage that would start with less than `MIN_START_S` of the budget left is skipped (it can be rerun
with `--stages`). Exit status 0 when every stage that ran passed and none was skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: stage -> its own time limit in seconds on a GPU (the dry run uses DRY_LIMIT_S), in running order
LIMIT_S = {"device": 60, "tiny-7m": 60, "qwen-0.5b": 150, "qwen-1.5b": 60, "qwen-3b": 75, "paper": 150,
           "nccl-ddp": 60, "nccl-fsdp2": 60}
DRY_LIMIT_S = 150
TORCHRUN = {"nccl-ddp", "nccl-fsdp2"}
MIN_START_S = 20


def stage_command(stage: str, result: Path, work: Path, device: str, tiny: bool) -> list[str]:
    args = [str(HERE / "gpu_stages.py"), stage, "--result", str(result), "--work", str(work), "--device", device]
    args += ["--tiny"] if tiny else []
    if stage in TORCHRUN:  # torchrun itself, as the module (the `torchrun` on PATH may be another Python's)
        return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "1", *args]
    return [sys.executable, *args]


def run_stage(stage: str, out: Path, work: Path, device: str, tiny: bool, limit: float, log) -> dict:
    """One stage in a subprocess (its own session, killed whole at the limit); its JSON dict with status."""
    result = work / f"{stage}.json"
    result.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error",
           "TOKENIZERS_PARALLELISM": "false"}
    if tiny:
        env["OMP_NUM_THREADS"] = "1"
    log.write(f"\n===== {stage} (limit {limit:.0f} s) =====\n")
    log.flush()
    t0 = time.perf_counter()
    proc = subprocess.Popen(stage_command(stage, result, work, device, tiny), cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        code = proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()
        return {"stage": stage, "status": "timeout", "ok": False, "limit_s": limit,
                "wall_seconds": time.perf_counter() - t0, "error": f"killed after its {limit:.0f} s limit"}
    data = json.loads(result.read_text()) if result.is_file() else {
        "stage": stage, "ok": False, "error": f"exited {code} without a result (see gpu_check.log)"}
    data.pop("traceback", None) if data.get("ok") else None
    data.update(status="passed" if data.get("ok") and code == 0 else "failed", exit_code=code, limit_s=limit,
                process_seconds=time.perf_counter() - t0)
    return data


def _fmt(x, digits: int = 1) -> str:
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:,.{digits}f}"
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


def markdown(report: dict) -> str:
    """The report's tables: stages, device, Qwen shapes, tiny CPU/GPU ratio, paper run, data parallel."""
    st = {s["stage"]: s for s in report["stages"]}
    lines = [f"# GPU check ({'dry run, ' if report['tiny'] else ''}device {report['device']})", "",
             f"{report['passed']} of {len(report['stages'])} stages passed; total {report['seconds']:.0f} s.", "",
             "| stage | status | seconds | note |", "|---|---|---|---|"]
    for s in report["stages"]:
        note = (s.get("error") or "").replace("|", "/").replace("\n", " ")[:160]
        lines.append(f"| {s['stage']} | {s['status']} | {_fmt(s.get('process_seconds', s.get('wall_seconds')), 0)} | {note} |")
    d = st.get("device", {})
    if d.get("ok"):
        lines += ["", "| device | driver (nvidia-smi) | torch | CUDA | transformers | Python | memory GiB | bf16 peak TFLOP/s (datasheet) | bf16 matmul TFLOP/s (measured) |",
                  "|---|---|---|---|---|---|---|---|---|",
                  f"| {d.get('name')} | {d.get('nvidia_smi', '–')} | {d.get('torch')} | {d.get('torch_cuda')} | "
                  f"{d.get('transformers')} | {d.get('python')} | {_fmt(d.get('memory_gib'))} | "
                  f"{_fmt(d.get('bf16_peak_tflops'), 0)} | {_fmt(d.get('matmul_bf16_tflops'))} |"]
    qwen = [st[k] for k in ("qwen-0.5b", "qwen-1.5b", "qwen-3b") if st.get(k, {}).get("ok")]
    if qwen:
        lines += ["", "Qwen2.5-shaped random models under the paper recipe (MFU = (6 + 2) x params x tokens / time / "
                  "datasheet bf16 peak, the 2 for the scoring pass):", "",
                  "| model | params | autocast | rollout gen. tokens/s | rollout rows x width | update rows that fit (of) | "
                  "update tokens/s | MFU | peak GiB | fits one 80 GB GPU | weight dtype | probe weights changed |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for s in qwen:
            r, u = s.get("rollout", {}), s["update"]
            lines.append(f"| {s['stage']} | {_fmt(s['params'])} | {s['autocast'].replace('torch.', '')} | "
                         f"{_fmt(r.get('generated_tokens_per_s'), 0)} | "
                         f"{_fmt(r.get('rows'))} x {_fmt(r.get('width'))} | {u['rows']} ({u['full_rows']}) | "
                         f"{_fmt(u.get('update_tokens_per_s'), 0)} | {_fmt(u.get('mfu'), 3)} | "
                         f"{_fmt(u.get('peak_memory_gib'))} | {_fmt(u.get('fits_h100_80gb'))} | {u.get('param_dtype', '–')} | "
                         f"{_fmt(u.get('probe_changed_fraction'), 4)} |")
    t = st.get("tiny-7m", {})
    if t.get("ok"):
        lines += ["", f"Tiny family, one full GRPO step of {t['model']} ({_fmt(t['params'])} params, {t['rollouts']} "
                  f"rollouts): CPU / {report['device']} step time = {_fmt(t.get('cpu_over_device_step'), 2)}", "",
                  "| where | collect s | update s | generated tokens/s |", "|---|---|---|---|"]
        for where in dict.fromkeys([report["device"], "cpu"]):
            w = t[where]
            lines.append(f"| {where} | {_fmt(w['collect_seconds'], 2)} | {_fmt(w['update_seconds'], 2)} | "
                         f"{_fmt(w['generated_tokens_per_s'], 0)} |")
    p = st.get("paper", {})
    if p.get("step_rows"):
        lines += ["", f"`reproduce --preset paper`, 2 RL steps (record status {p.get('record_status')}, {_fmt(p.get('seconds'), 0)} s; "
                  f"overrides: {' '.join(p.get('overrides', []))}):", "",
                  "| step | step s | rollout s | response tokens | engine/trainer log-prob gap |", "|---|---|---|---|---|"]
        for r in p["step_rows"]:
            lines.append(f"| {r.get('step')} | {_fmt(r.get('time_step_s'), 1)} | {_fmt(r.get('time_rollout_s'), 1)} | "
                         f"{_fmt(r.get('response_tokens'))} | {_fmt(r.get('rollout/logprob_mismatch_max'), 6)} |")
    dps = [st[k] for k in ("nccl-ddp", "nccl-fsdp2") if st.get(k, {}).get("ok")]
    if dps:
        lines += ["", "Data-parallel update under torchrun, 1 process (world size 1), vs the plain update:", "",
                  "| strategy | backend | wrapped as | max abs diff vs plain | largest update | plain s | parallel s |",
                  "|---|---|---|---|---|---|---|"]
        for s in dps:
            lines.append(f"| {s['strategy']} | {s['backend']} | {s['wrapped_as']} | {s['max_abs_diff_vs_plain']:.2e} | "
                         f"{s['max_update_size']:.2e} | {_fmt(s['plain_seconds'], 2)} | {_fmt(s['parallel_seconds'], 2)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT") or "gpu-check-out", help="folder for the 3 files")
    parser.add_argument("--work", default=None, help="scratch folder (default: <out>/../gpu-check-work)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tiny", action="store_true", help="tiny shapes: the CPU dry run")
    parser.add_argument("--stages", default=",".join(LIMIT_S), help="comma-separated subset, in running order")
    parser.add_argument("--budget-s", type=float, default=420.0, help="total seconds for all stages")
    args = parser.parse_args(argv)
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = [s for s in stages if s not in LIMIT_S]
    if unknown:
        parser.error(f"unknown stages {unknown}; choose from {list(LIMIT_S)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(args.work) if args.work else Path(os.environ.get("TMPDIR", "/tmp")) / f"gpu-check-work-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    results = []
    with (out / "gpu_check.log").open("w") as log:
        for stage in stages:
            left = args.budget_s - (time.perf_counter() - t0)
            if left < MIN_START_S:
                results.append({"stage": stage, "status": "skipped", "ok": False,
                                "error": f"budget spent ({left:.0f} s left); rerun with --stages {stage}"})
                continue
            limit = min(DRY_LIMIT_S if args.tiny else LIMIT_S[stage], left)
            results.append(run_stage(stage, out, work, args.device, args.tiny, limit, log))
            print(f"{stage}: {results[-1]['status']} ({results[-1].get('process_seconds', 0):.0f} s)", flush=True)
    report = {"device": args.device, "tiny": args.tiny, "seconds": time.perf_counter() - t0, "budget_s": args.budget_s,
              "passed": sum(r["status"] == "passed" for r in results), "stages": results}
    (out / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str))
    text = markdown(report)
    (out / "gpu_check.md").write_text(text)
    print(text)
    return 0 if report["passed"] == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
