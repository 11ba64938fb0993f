#!/usr/bin/env bash
# Engine vs simulator fidelity on CUDA (issue 7): profile the engine's verify step, draft and join costs on
# the GPU, measure the DSpark drafter's curves and request-step samples there, run the same closed-loop
# workload (ar, fixed k=3, dspark) in the engine and in the simulator fed with that cost table and those
# samples (acceptance.model "empirical"); print the side-by-side table.
# One run, <= 8 minutes (hard timeout 450 s). Uses the committed checkpoints (engine/checkpoints).
# Runs the engine with `--device cuda` (engine.loop.EngineConfig `device`; the models are moved by the caller).
# Usage: bench/gpu_fidelity.sh [extra `specbed fidelity` options]
#        CPU smoke test: DEVICE=cpu bench/gpu_fidelity.sh --requests 16
# Python: $PYTHON if set, else the first of python3 / .venv/bin/python whose torch sees CUDA.
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICE="${DEVICE:-cuda}"
OUT="${OUT:-results/gpu_fidelity}"
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
if [ "$DEVICE" != "cpu" ]; then
    command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
fi
"$PY" -c 'import torch, platform; print("torch", torch.__version__, "| python", platform.python_version())'
mkdir -p "$OUT"
start=$(date +%s)
# 32 concurrent requests of 32 + 128 bytes, 192 in all: ~25-128 engine steps per request; the profiles
# (2 per policy, 8 verify lengths x 48 requests) and the samples are measured in the same process, then
# 3 policies x (engine + sim). --attempts 1: no reruns on a drifting machine (the time limit).
timeout 450 "$PY" -m specbed fidelity --device "$DEVICE" --concurrency 32 --requests 192 \
    --prompt-len 32 --output-len 128 --attempts 1 --out "$OUT" "$@"
echo "gpu_fidelity: $(( $(date +%s) - start )) s wall; results in $OUT (fidelity.json, cost.csv, curves.json)"
