#!/bin/sh
# Protected GPU GEMM vs plain cuBLAS, side by side in one process (tests/gpu/bench_gpu_gemm.c).
# Usage: scripts/bench_gpu.sh [BUILD_DIR] [OUT_DIR]; environment: TYPES (S,D; C and Z too), SIZES (square n or
# MxNxK items), BLOCKS (32,64,128,256), CHECKSUMS (1), REPS (10).
# BENCH_SCHED (-1 automatic, or a list of 0-3: tests/gpu/bench_gpu_gemm.c) and BENCH_SKIPS pass through.
# Writes OUT_DIR/bench_gpu.jsonl (one JSON object per run) and prints the ratio table
# (scripts/bench_gpu_table.py) for docs/gpu-benchmark.md.
set -eu
build=${1:-build-gpu}
out=${2:-.}
mkdir -p "$out"
types=${TYPES:-S,D}
sizes=${SIZES:-1024,2048,4096,8192,16384}
blocks=${BLOCKS:-32,64,128,256}
checksums=${CHECKSUMS:-1}
reps=${REPS:-10}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$out/bench_gpu_device.txt" 2>/dev/null || true
"$build/tests/gpu/bench_gpu_gemm" "$types" "$sizes" "$blocks" "$checksums" "$reps" | tee -a "$out/bench_gpu.jsonl"
python3 "$(dirname "$0")/bench_gpu_table.py" "$out/bench_gpu.jsonl"
