#!/usr/bin/env bash
# Install the package (CPU torch) into .venv and run the quick reproduction table (the README's main job).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -d .venv ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q "torch==2.13.0"
python -m pip install -q -e .
agentbench-af reproduce --preset "${PRESET:-cpu-quick}" "$@"
