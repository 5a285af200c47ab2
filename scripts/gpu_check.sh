#!/usr/bin/env bash
# The GPU check (docs/gpu.md): install the project offline from carried wheels, then run every stage of
# benchmarks/gpu_check.py and write gpu_check.json, gpu_check.md and gpu_check.log to $OUT (or --out).
#   bash scripts/gpu_check.sh [gpu_check.py options]   # on a CUDA machine; wheels from scripts/gpu_wheels.sh
#   bash scripts/gpu_check.sh --dry-run [options]      # CPU, tiny shapes, no install step (what CI runs)
# The install keeps the machine's torch and transformers (--no-deps) and reaches no network (--no-index).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ "${1:-}" = "--dry-run" ]; then
  shift
  exec "$PY" benchmarks/gpu_check.py --device cpu --tiny "$@"
fi
WHEELS=${GPU_WHEELS:-.gpu-wheels}
if [ -d "$WHEELS" ]; then
  "$PY" -m pip install -q --no-index --no-deps --no-cache-dir "$WHEELS"/*.whl || { echo "wheel install failed"; exit 2; }
else
  echo "no $WHEELS folder: assuming gymnasium, bm25s and rapidfuzz are installed"
fi
"$PY" -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir -e . || { echo "project install failed"; exit 2; }
"$PY" -c "import agentbench_af, gymnasium, bm25s, rapidfuzz, torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'cuda', torch.cuda.is_available())" || exit 2
exec "$PY" benchmarks/gpu_check.py "$@"
