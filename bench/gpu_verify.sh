#!/usr/bin/env bash
# Time the Triton verifier against the torch reference on CUDA: R in {1, 64, 256}, gamma = 7,
# V in {32000, 150000} (engine/verify_bench.py; also checks both return identical tokens). <= 5 minutes.
# Usage: bench/gpu_verify.sh [--repeats N]      (CPU smoke test: bench/gpu_verify.sh --device cpu --tiny)
# Python: $PYTHON if set, else the first of python3 / .venv/bin/python whose torch sees CUDA.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
    for cand in python3 .venv/bin/python; do
        if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
            PY="$cand"
            break
        fi
    done
fi
PY="${PY:-.venv/bin/python}"
if [[ " $* " != *" --device cpu "* ]]; then
    unset TRITON_INTERPRET  # native kernels on CUDA: the interpreter must not be selected
fi
exec timeout 290 "$PY" -m engine.verify_bench "$@"
