"""Does bf16 pay on this CPU? fp32 against bf16 autocast, on matmuls and on a SmolLM2-shaped model.

`model.dtype=bfloat16` on a CPU runs the policy update under `torch.autocast(dtype=bfloat16)` (generation and
SFT stay fp32). Whether that is faster depends on the CPU: without native bf16 instructions torch emulates
them and bf16 is far slower; with AVX512-BF16 or AMX it can be faster. This script measures, one process:

- `matmul`: an N x N by N x N product, fp32 tensors against bf16 tensors (GFLOP/s);
- `train`: forward + backward of a Llama with SmolLM2-135M's shape (hidden 576, 9 query / 3 key-value heads,
  SwiGLU 1536, vocabulary 49,152, tied embeddings; `--layers` of its 30, random weights: the time does not
  depend on them) on `--rows` x `--columns` tokens, fp32 against bf16 autocast (the update's setting);
- `decode`: `--new-tokens` KV-cached decoding steps of `--rows` rows after a `--columns`-token prompt
  (`generate`, greedy, fixed length), fp32 against bf16 autocast (what a bf16 rollout engine would gain).

Each figure is the median of `--repeats` timed repetitions after one untimed warm-up, fp32 and bf16
alternating (AB, BA, ...). Printed: the CPU's model name and its bf16 flags, the load average before and
after (the machine may be shared), and per operation the fp32 and bf16 seconds and their ratio.

    python benchmarks/cpu_precision.py                         # 1 thread, 6 layers
    python benchmarks/cpu_precision.py --layers 30 --threads 2 --json

Left out: numerical agreement of bf16 training with fp32 (a declared run measures that) and GPUs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from tabulate import tabulate

#: SmolLM2-135M-Instruct's shape (models.packaged's GGUF converts to this config); layers are set per call
VOCAB = 49152
SMOLLM2_SHAPE: dict[str, Any] = dict(hidden_size=576, intermediate_size=1536, num_attention_heads=9,
                                     num_key_value_heads=3, vocab_size=VOCAB, rope_theta=100000.0, tie_word_embeddings=True,
                                     max_position_embeddings=8192)


def cpu_description() -> tuple[str, list[str]]:
    """The CPU's model name and which of its flags concern bf16 (Linux `/proc/cpuinfo`; else `platform`)."""
    info = Path("/proc/cpuinfo")
    if not info.exists():
        return platform.processor() or "unknown", []
    name, flags = "unknown", list[str]()
    for line in info.read_text().splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and name == "unknown":
            name = value.strip()
        if key.strip() == "flags" and not flags:
            flags = sorted(f for f in value.split() if "bf16" in f or f.startswith("amx"))
    return name, flags


def median_seconds(runs: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median wall seconds of each callable over `repeats` repetitions after one warm-up, alternating order."""
    names = list(runs)
    for name in names:
        runs[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for i in range(repeats):
        for name in names if i % 2 == 0 else names[::-1]:
            start = time.perf_counter()
            runs[name]()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def autocast(dtype: torch.dtype | None):
    """bf16 autocast on the CPU when `dtype` is given, as the update does; else nothing."""
    return torch.autocast("cpu", dtype=dtype) if dtype is not None else contextlib.nullcontext()


def matmul_runs(n: int) -> dict[str, Callable[[], object]]:
    a32, b32 = torch.randn(n, n), torch.randn(n, n)  # (n, n)
    a16, b16 = a32.bfloat16(), b32.bfloat16()  # (n, n)
    return {"fp32": lambda: a32 @ b32, "bf16": lambda: a16 @ b16}


def smollm2_shaped(layers: int) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(num_hidden_layers=layers, **SMOLLM2_SHAPE))


def train_runs(lm: torch.nn.Module, rows: int, columns: int) -> dict[str, Callable[[], object]]:
    ids = torch.randint(0, VOCAB, (rows, columns))  # (B, T)

    def step(dtype: torch.dtype | None) -> None:
        lm.zero_grad(set_to_none=True)
        with autocast(dtype):
            loss = lm(input_ids=ids, labels=ids).loss
        loss.backward()

    return {"fp32": lambda: step(None), "bf16": lambda: step(torch.bfloat16)}


def decode_runs(lm: Any, rows: int, columns: int, new_tokens: int) -> dict[str, Callable[[], object]]:
    ids = torch.randint(3, VOCAB, (rows, columns))  # (B, T)

    def decode(dtype: torch.dtype | None) -> None:
        with torch.no_grad(), autocast(dtype):
            lm.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                        min_new_tokens=new_tokens, do_sample=False, pad_token_id=0)

    return {"fp32": lambda: decode(None), "bf16": lambda: decode(torch.bfloat16)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=6, help="decoder layers of SmolLM2's shape (it has 30)")
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--columns", type=int, default=256, help="tokens per row (train) and prompt length (decode)")
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--matmul-size", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = ap.parse_args()
    if min(args.layers, args.rows, args.columns, args.new_tokens, args.matmul_size, args.repeats, args.threads) < 1:
        ap.error("every size, count and thread number must be at least 1")
    torch.set_num_threads(args.threads)
    name, flags = cpu_description()
    load_before = os.getloadavg()
    lm = smollm2_shaped(args.layers)
    n = args.matmul_size
    ops = {
        f"matmul {n} x {n}": matmul_runs(n),
        f"train fwd+bwd {args.rows} x {args.columns}, {args.layers} layers": train_runs(lm, args.rows, args.columns),
        f"decode {args.rows} x {args.new_tokens} after {args.columns}, {args.layers} layers":
            decode_runs(lm.eval(), args.rows, args.columns, args.new_tokens),
    }
    rows = []
    for op, runs in ops.items():
        t = median_seconds(runs, args.repeats)
        rows.append({"operation": op, "fp32_s": t["fp32"], "bf16_s": t["bf16"], "fp32_over_bf16": t["fp32"] / t["bf16"]})
    gflop = 2 * n**3 / 1e9
    result = {"cpu": name, "bf16_flags": flags, "torch": torch.__version__, "threads": args.threads,
              "capability": torch.backends.cpu.get_cpu_capability(), "load_before": load_before,
              "load_after": os.getloadavg(), "matmul_gflops": {k: gflop / rows[0][f"{k}_s"] for k in ("fp32", "bf16")},
              "rows": rows}
    if args.json:
        print(json.dumps(result))
        return
    print(f"{name}; bf16 flags: {' '.join(flags) or 'none'}; torch {torch.__version__} ({result['capability']}); "
          f"{args.threads} thread(s); load average {load_before[0]:.1f} before, {result['load_after'][0]:.1f} after")
    print(f"matmul GFLOP/s: fp32 {result['matmul_gflops']['fp32']:.1f}, bf16 {result['matmul_gflops']['bf16']:.1f}")
    print(tabulate([[r["operation"], f"{r['fp32_s']:.4f}", f"{r['bf16_s']:.4f}", f"{r['fp32_over_bf16']:.2f}x"]
                    for r in rows], headers=["operation", "fp32 s", "bf16 s", "fp32 / bf16"], tablefmt="github"))


if __name__ == "__main__":
    main()
