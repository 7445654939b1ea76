#!/usr/bin/env bash
# A first look at libblas_ft: installs what is missing (Debian), builds the library, compiles an
# ordinary BLAS program against the system BLAS (-lblas, nothing of libblas_ft), runs it once as
# it is and once under LD_PRELOAD=libblas_ft.so, and prints libblas_ft's exit report.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export DEBIAN_FRONTEND=noninteractive

PACKAGES=(meson ninja-build gcc pkg-config libopenblas0-pthread libopenblas-dev libblas-dev
          python3)
BUILD=build-demo

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing=()
for p in "${PACKAGES[@]}"; do
    # installed, not only known: a removed package keeps "deinstall ok config-files"
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing: ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" </dev/null
fi

echo "== building libblas_ft in $BUILD"
if [ ! -f "$BUILD/build.ninja" ]; then
    meson setup "$BUILD" -Dtests=false >/dev/null
fi
ninja -C "$BUILD" >/dev/null
LIB="$PWD/$BUILD/libblas_ft.so"

# The demo program: tests/integration/gemm_app.c, an ordinary CBLAS/Fortran-BLAS program that
# checks every GEMM it makes against its own long double loop. It is linked with the system BLAS.
APP="$BUILD/gemm_app"
cc -std=c17 -O2 -o "$APP" tests/integration/gemm_app.c tests/integration/gemm_run.c \
    tests/integration/gemm_check.c -lblas -lm
echo "== $APP is linked with:"
ldd "$APP" | grep -E "blas|lapack" | sed 's/^/   /'

echo
echo "== 1. plain run (the system BLAS)"
OPENBLAS_NUM_THREADS=2 "$APP" | tail -n 1

REPORT="$PWD/$BUILD/report.json"
rm -f "$REPORT"
echo
echo "== 2. the same binary under LD_PRELOAD=$LIB"
echo "   BLASFT_MODE=correct (every GEMM with checksums), BLASFT_REPORT=$REPORT"
echo "   (GEMMs without a product, alpha = 0 or k = 0, are C = beta C: nothing to check, so the"
echo "   report counts them in unprotected_gemms)"
LD_PRELOAD="$LIB" BLASFT_MODE=correct BLASFT_REPORT="$REPORT" OPENBLAS_NUM_THREADS=2 \
    "$APP" | tail -n 1
echo
echo "== exit report ($REPORT, valid JSON: checked with python3 -m json.tool):"
python3 -m json.tool "$REPORT" >/dev/null
cat "$REPORT"

REPORT_INJECT="$PWD/$BUILD/report-inject.json"
INJECT="faults=1,bits=exponent,site=output,seed=1"
rm -f "$REPORT_INJECT"
echo
echo "== 3. the same binary again, with one bit flip planted in the result of every GEMM"
echo "   BLASFT_INJECT=$INJECT"
echo "   (an exponent bit of one random element of C is flipped after the multiplication,"
echo "   before the check; the program's own check shows whether anything wrong got through)"
LD_PRELOAD="$LIB" BLASFT_MODE=correct BLASFT_INJECT="$INJECT" BLASFT_REPORT="$REPORT_INJECT" \
    OPENBLAS_NUM_THREADS=2 "$APP" | tail -n 1
echo
echo "== what libblas_ft saw ($REPORT_INJECT):"
python3 - "$REPORT_INJECT" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
a = r["abft"]
for key in ("protected_gemms", "faults_injected", "errors_detected", "errors_corrected",
            "blocks_recomputed", "uncorrectable"):
    print(f"   {key:18} {a[key]}")
print(f"   first events (of {r['events_total']}):")
for e in r["events"][:3]:
    print(f"     {e['routine']} ({e['type']}): {e['kind']} block {e['block']} element "
          f"{e['element']}: |syndrome| {e['syndrome']:.3g} > threshold {e['threshold']:.3g}, "
          f"{e['action']}")
PY
