#!/usr/bin/env bash
# Download, here (with network access), the wheels that scripts/gpu_check.sh installs offline on a CUDA
# machine that has Python 3.12 with torch, transformers, numpy, pandas, scipy, matplotlib, typer, tabulate,
# tqdm, pyyaml, safetensors and tokenizers already (the lent H100/H200 image): exactly what the project
# imports and that image lacks. torch and transformers are never downloaded (the machine's own are used).
#   bash scripts/gpu_wheels.sh [DIR]     # default .gpu-wheels (ignored by git); prints the folder's size
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-.gpu-wheels}
PY=${PYTHON:-python3}
# one version of each (two of one name stop an offline install); each line's comment says who needs it
WHEELS=(
  "gymnasium==1.4.0"            # agentbench_af.api: the environment contract
  "farama-notifications==0.0.6" # gymnasium's only dependency the image lacks (cloudpickle, numpy, typing-extensions are there)
  "bm25s==0.3.16"               # WebShop-v0's search engine
  "rapidfuzz==3.14.6"           # WebShop-v0's attribute matching
  "setuptools==80.9.0"          # the build backend pyproject.toml names (>=77), for the offline editable install
)
rm -rf "$DIR" && mkdir -p "$DIR"
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any -d "$DIR" "${WHEELS[@]}"
ls -1 "$DIR"
du -sh "$DIR"
