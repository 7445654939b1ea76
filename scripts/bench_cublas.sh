#!/bin/bash
# Device run of the cuBLAS interposer (issue 5), building nothing: the C entry-point test
# (protected and BLASFT_MODE=off), the CuPy and PyTorch checks, the plain vs protected benchmark
# through both (interleaved in one process, see bench_cublas.py) and its ratio table. Needs a
# configured, built build dir (-Dcuda=enabled). Logs go to $OUT (or ./cublas-out). BENCH=0 skips
# the benchmark; T_C, T_CHECK, T_BENCH are the time limits (s) of each program.
#   scripts/bench_cublas.sh [build-dir]
B=$(realpath "${1:-build-cublas}")
O=${OUT:-cublas-out}
mkdir -p "$O"
# the exit reports (kept out of $O, which returns few files); the preload is set on the program
# itself, not on timeout, whose own exit report would overwrite the program's
R=$(mktemp -d)
LIB=$B/libblas_ft.so
PY=${PYTHON:-python3}
S=$(dirname "$0")/bench_cublas.py
export PYTHONUNBUFFERED=1
{
  nvidia-smi -L; ldd "$LIB" | grep -v linux-vdso
  $PY -c 'import torch, cupy; print("torch", torch.__version__, "cupy", cupy.__version__)'
} >"$O/diag.log" 2>&1
{
  echo "== C entry points (protected)"
  time timeout "${T_C:-60}" env BLASFT_REPORT=$R/report-c.json LD_PRELOAD=$LIB "$B/tests/cublas/test_cublas_entry"
  echo "rc=$?"
  echo "== C entry points (BLASFT_MODE=off)"
  time timeout "${T_C:-60}" env BLASFT_MODE=off LD_PRELOAD=$LIB "$B/tests/cublas/test_cublas_entry" --expect-off
  echo "rc=$?"
} >"$O/c.log" 2>&1
for fw in torch cupy; do
  timeout "${T_CHECK:-90}" env BLASFT_REPORT=$R/report-$fw.json LD_PRELOAD=$LIB $PY "$S" check $fw >"$O/$fw.log" 2>&1
  echo "rc=$?" >>"$O/$fw.log"
done
[ "${BENCH:-1}" = 0 ] || {
  for fw in torch cupy; do
    timeout "${T_BENCH:-120}" env LD_PRELOAD=$LIB $PY "$S" bench $fw
  done
} >"$O/bench.jsonl" 2>&1
{
  for r in c torch cupy; do echo "== $r"; $PY "$S" report "$R/report-$r.json"; done
  [ -f "$O/bench.jsonl" ] && $PY "$S" table "$O/bench.jsonl"
} >"$O/reports.txt" 2>&1
tail -n 3 "$O/c.log" "$O/torch.log" "$O/cupy.log"; cat "$O/reports.txt"
