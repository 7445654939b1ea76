#!/bin/bash
# Side-by-side DGEMM from host memory (issue 6): libblas_ft on the GPU (cache off and cache hash,
# fresh and repeated operands) vs NVBLAS (unprotected, from the CUDA toolkit) vs OpenBLAS on the
# host cores. One JSON line per configuration on stdout (tests/offload/bench_offload.c).
#   scripts/bench_offload.sh <dir with bench_offload and libblas_ft.so.0.1.0> <OpenBLAS lib dir> [n...]
# The OpenBLAS dir holds libopenblas.so.0 (and its libgfortran/libquadmath where the machine has
# none); NVBLAS is taken from $CUDA_HOME/lib64 (default /usr/local/cuda). OpenBLAS may not
# recognise a virtual CPU (on the device machine it picks its generic Prescott kernels, 6x slower):
# set OPENBLAS_CORETYPE (e.g. SkylakeX there) in the environment; it is passed to every run.
set -u
BIN=$1
OBL=$2
shift 2
SIZES=${*:-4096 8192}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export LD_LIBRARY_PATH=$OBL:${LD_LIBRARY_PATH:-}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-$(nproc)}
NVCONF=$(mktemp)
# NVBLAS settings (NVBLAS documentation, "NVBLAS configuration"): the host BLAS for what it keeps
# on the CPU, every GPU, automatic pinning of the user's buffers (its fastest mode: pinned copies;
# the issue's 224 ms reference was measured with it), default tile dimension.
cat >"$NVCONF" <<CONF
NVBLAS_LOGFILE /dev/null
NVBLAS_CPU_BLAS_LIB $OBL/libopenblas.so.0
NVBLAS_GPU_LIST ALL
NVBLAS_TILE_DIM ${NVBLAS_TILE_DIM:-2048}
NVBLAS_AUTOPIN_MEM_ENABLED
CONF
run() { # label env... -- n reps operands
    local label=$1
    shift
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    env "${envs[@]}" timeout 300 "$BIN/bench_offload" "$label" "$@" || echo "{\"label\": \"$label\", \"n\": $1, \"operands\": \"$3\", \"failed\": true}"
}
for n in $SIZES; do
    reps=7
    [ "$n" -ge 8192 ] && reps=5
    for ops in fresh repeat; do
        [ "$ops" = fresh ] && run openblas OPENBLAS_NUM_THREADS=$OPENBLAS_NUM_THREADS -- "$n" 3 "$ops"
        run nvblas LD_PRELOAD=$CUDA_HOME/lib64/libnvblas.so NVBLAS_CONFIG_FILE=$NVCONF -- "$n" "$reps" "$ops"
        run blas_ft-gpu-cache-off LD_PRELOAD=$BIN/libblas_ft.so.0.1.0 BLASFT_DEVICE=gpu BLASFT_CACHE=off -- "$n" "$reps" "$ops"
        run blas_ft-gpu-cache-hash LD_PRELOAD=$BIN/libblas_ft.so.0.1.0 BLASFT_DEVICE=gpu BLASFT_CACHE=hash -- "$n" "$reps" "$ops"
    done
done
rm -f "$NVCONF"
