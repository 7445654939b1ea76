#!/bin/bash
# Auto dispatch against its alternatives at every size (issue 6: "at no size more than 10 %
# slower than the host BLAS"): per type, n and operand kind, one process each for OpenBLAS alone,
# libblas_ft on the host engine (BLASFT_DEVICE=host), on the GPU (BLASFT_DEVICE=gpu) and with
# auto dispatch, in rounds so that each contender sees the machine in the same state. One JSON
# line per run on stdout (tests/offload/bench_offload.c), the libblas_ft runs with where their
# calls ran and the false alarms of their exit report.
#   scripts/bench_dispatch.sh <dir with bench_offload and libblas_ft.so.0.1.0> <OpenBLAS lib dir> [n...]
# Environment: TYPES (default "d s"), ROUNDS (default 2), OPERANDS (default "fresh repeat"),
# OPENBLAS_CORETYPE passed through (see scripts/bench_offload.sh).
set -u
BIN=$1
OBL=$2
shift 2
SIZES=${*:-64 96 128 192 256 384 512 768 1024 1536 2048}
TYPES=${TYPES:-d s}
ROUNDS=${ROUNDS:-2}
OPERANDS=${OPERANDS:-fresh repeat}
export LD_LIBRARY_PATH=$OBL:${LD_LIBRARY_PATH:-}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-$(nproc)}
FT=$BIN/libblas_ft.so.0.1.0
REPORT=$(mktemp)
trap 'rm -f "$REPORT"' EXIT
# label preload env... -- n reps operands type
run() {
    local label=$1 preload=$2
    shift 2
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    local line
    if [ -z "$preload" ]; then
        line=$(timeout 300 env "${envs[@]}" "$BIN/bench_offload" "$label" "$@")
    else
        rm -f "$REPORT"
        line=$(timeout 300 env LD_PRELOAD="$preload" BLASFT_REPORT="$REPORT" "${envs[@]}" \
            "$BIN/bench_offload" "$label" "$@")
        if [ -n "$line" ] && [ -s "$REPORT" ]; then
            # where the calls ran and what the engine flagged, from the exit report
            local extra
            extra=$(python3 - "$REPORT" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
calls = r.get("calls", {})
host = sum(v.get("host_count", 0) for v in calls.values())
gpu = sum(v.get("gpu_count", 0) for v in calls.values())
ab = r.get("abft", {})
print(f'"host_calls": {host}, "gpu_calls": {gpu}, "false_alarms": {ab.get("false_alarms", 0)}, '
      f'"errors_detected": {ab.get("errors_detected", 0)}')
PY
)
            line="${line%\}}, $extra}"
        elif [ -n "$line" ]; then # no exit report: the library was not loaded
            line="${line%\}}, \"failed\": true}"
        fi
    fi
    [ -n "$line" ] || line="{\"label\": \"$label\", \"type\": \"$4\", \"n\": $1, \"operands\": \"$3\", \"failed\": true}"
    echo "$line"
}
for round in $(seq "$ROUNDS"); do
    for t in $TYPES; do
        for n in $SIZES; do
            reps=31
            [ "$n" -ge 512 ] && reps=15
            [ "$n" -ge 2048 ] && reps=9
            for ops in $OPERANDS; do
                run openblas "" -- "$n" "$reps" "$ops" "$t"
                run blas_ft-host "$FT" BLASFT_DEVICE=host -- "$n" "$reps" "$ops" "$t"
                run blas_ft-gpu "$FT" BLASFT_DEVICE=gpu BLASFT_CACHE=hash -- "$n" "$reps" "$ops" "$t"
                run blas_ft-auto "$FT" BLASFT_DEVICE=auto BLASFT_CACHE=hash -- "$n" "$reps" "$ops" "$t"
            done | sed "s/^{/{\"round\": $round, /"
        done
    done
done
