#!/bin/bash
# Side-by-side GEMM from host memory (issue 6): libblas_ft on the GPU (cache off, cache hash, and
# auto dispatch) vs NVBLAS (unprotected, from the CUDA toolkit) vs OpenBLAS on the host cores,
# DGEMM and SGEMM, fresh and repeated operands. One JSON line per configuration on stdout
# (tests/offload/bench_offload.c).
#   scripts/bench_offload.sh <dir with bench_offload and libblas_ft.so.0.1.0> <OpenBLAS lib dir> [n...]
# Environment: TYPES (default "d s"), NVBLAS_TILES (NVBLAS_TILE_DIM values to try, default
# "2048 4096"), HOST_MAX_N (largest n for the host runs of libblas_ft, default 4096: its host
# engine at 8192 takes seconds per call and auto dispatch does not use it there).
# The OpenBLAS dir holds libopenblas.so.0 (and its libgfortran/libquadmath where the machine has
# none); NVBLAS is taken from $CUDA_HOME/lib64 (default /usr/local/cuda). OpenBLAS may not
# recognise a virtual CPU (on the device machine it picks its generic Prescott kernels, 6x slower):
# set OPENBLAS_CORETYPE (e.g. SkylakeX there) in the environment; it is passed to every run.
set -u
BIN=$1
OBL=$2
shift 2
SIZES=${*:-1024 2048 4096 8192 16384}
TYPES=${TYPES:-d s}
NVBLAS_TILES=${NVBLAS_TILES:-2048 4096}
HOST_MAX_N=${HOST_MAX_N:-4096}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export LD_LIBRARY_PATH=$OBL:${LD_LIBRARY_PATH:-}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-$(nproc)}
# NVBLAS settings (NVBLAS documentation, "NVBLAS configuration"): the host BLAS for what it keeps
# on the CPU, every GPU, automatic pinning of the user's buffers (its fastest mode: pinned copies;
# the issue's 224 ms reference was measured with it), the tile dimension as given.
nvconf() {
    local f
    f=$(mktemp)
    cat >"$f" <<CONF
NVBLAS_LOGFILE /dev/null
NVBLAS_CPU_BLAS_LIB $OBL/libopenblas.so.0
NVBLAS_GPU_LIST ALL
NVBLAS_TILE_DIM $1
NVBLAS_AUTOPIN_MEM_ENABLED
CONF
    echo "$f"
}
run() { # label env... -- n reps operands type
    local label=$1
    shift
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    # env inside timeout: the preload is set on the program itself, not on timeout, whose own
    # exit report would overwrite the program's
    timeout 300 env "${envs[@]}" "$BIN/bench_offload" "$label" "$@" ||
        echo "{\"label\": \"$label\", \"type\": \"$4\", \"n\": $1, \"operands\": \"$3\", \"failed\": true}"
}
FT=$BIN/libblas_ft.so.0.1.0
for t in $TYPES; do
    for n in $SIZES; do
        reps=9
        [ "$n" -ge 4096 ] && reps=7
        [ "$n" -ge 8192 ] && reps=5
        [ "$n" -ge 16384 ] && reps=3
        hreps=3
        [ "$n" -ge 16384 ] && hreps=1
        # small calls: more of them (they are short and noisier)
        [ "$n" -lt 1024 ] && reps=15 && hreps=9
        for ops in fresh repeat; do
            [ "$ops" = fresh ] && run openblas OPENBLAS_NUM_THREADS=$OPENBLAS_NUM_THREADS -- "$n" $hreps "$ops" "$t"
            [ "$ops" = fresh ] && [ "$n" -le "$HOST_MAX_N" ] &&
                run blas_ft-host LD_PRELOAD=$FT BLASFT_DEVICE=host -- "$n" $hreps "$ops" "$t"
            for tile in $NVBLAS_TILES; do
                conf=$(nvconf "$tile")
                run "nvblas-tile$tile" LD_PRELOAD=$CUDA_HOME/lib64/libnvblas.so NVBLAS_CONFIG_FILE=$conf -- "$n" "$reps" "$ops" "$t"
                rm -f "$conf"
            done
            run blas_ft-gpu-cache-off LD_PRELOAD=$FT BLASFT_DEVICE=gpu BLASFT_CACHE=off -- "$n" "$reps" "$ops" "$t"
            run blas_ft-gpu-cache-hash LD_PRELOAD=$FT BLASFT_DEVICE=gpu BLASFT_CACHE=hash -- "$n" "$reps" "$ops" "$t"
            run blas_ft-auto LD_PRELOAD=$FT BLASFT_DEVICE=auto BLASFT_CACHE=hash -- "$n" "$reps" "$ops" "$t"
        done
    done
done
