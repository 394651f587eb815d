#!/usr/bin/env bash
# Build the project's virtual environment following the verified recipes (DESIGN.md §5).
# Idempotent: steps whose result is already present are skipped.
set -euo pipefail
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
LLAMA_VERSION=0.3.36

if [ ! -x "$VENV/bin/python" ]; then
  echo "== creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)

# 1. PyTorch CPU build first, in its own command: otherwise a dependency pulls a CUDA build.
if ! "$VENV/bin/python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '2.13.0')" 2>/dev/null; then
  echo "== torch 2.13.0 (CPU)"
  "${PIP[@]}" install torch==2.13.0
fi

# 2. llama-cpp-python compiled portable: the native build segfaults on these CPUs (AMX).
if ! "$VENV/bin/python" -c "import llama_cpp, sys; sys.exit(llama_cpp.__version__ != '$LLAMA_VERSION')" 2>/dev/null; then
  echo "== llama-cpp-python $LLAMA_VERSION (portable build, several minutes)"
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON" \
    "${PIP[@]}" install --no-cache-dir "llama-cpp-python==$LLAMA_VERSION"
fi

# 3. Everything else, pinned in pyproject.toml (pyserini builds from source, ~75 s), with the
#    extras the tests exercise: Ray (the cluster executor) and llama-cpp-python's server, and
#    Qwen2.5-Coder-1.5B (1.1 GB in 22 packages, ~30 s): the LLM of nq's default answer-bearing judge.
echo "== bridge and its dependencies"
"${PIP[@]}" install -e ".[dev,ray,server,qwen,pyterrier]"
echo "== environment ready: $VENV"
