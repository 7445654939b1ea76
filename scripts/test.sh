#!/usr/bin/env bash
# The whole host test suite, as CI runs it (.ci/run): installs what is missing (Debian), builds
# libblas_ft twice in fresh build directories and runs every meson suite in both:
#   build-test       -Dwerror=true, CUDA auto (host-only without nvcc; GPU tests skip without a GPU)
#   build-test-asan  the same under AddressSanitizer + UndefinedBehaviorSanitizer, host only
# In the sanitizer build the LD_PRELOAD tests put the ASan/UBSan runtimes ahead of the
# instrumented libblas_ft in LD_PRELOAD (tests/integration/harness.py finds them with ldd), so the
# uninstrumented Debian testers run with our library checked.
# The last line is "N passed, N failed, N skipped"; the exit status is non-zero on any failure.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export DEBIAN_FRONTEND=noninteractive

PACKAGES=(meson ninja-build gcc gfortran pkg-config libcmocka-dev libopenblas0-pthread
          libopenblas-dev libblas-dev libblas3 libblas-test liblapack3 libmpfr-dev python3 python3-numpy
          r-base-core)
JOBS=$(nproc 2>/dev/null || echo 2)

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

install_missing() {
    local missing=()
    for p in "${PACKAGES[@]}"; do
        # installed, not only known: a removed package keeps "deinstall ok config-files"
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "== installing: ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            "${missing[@]}" </dev/null
}

passed=0 failed=0 skipped=0

# Adds one build's results (meson's testlog.json) to the totals.
count_results() {
    local log="$1/meson-logs/testlog.json"
    if [ ! -s "$log" ]; then
        echo "== no test log in $1"
        failed=$((failed + 1))
        return
    fi
    local counts
    counts=$(python3 - "$log" <<'EOF'
import json, sys
p = f = s = 0
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"):
        p += 1
    elif r == "SKIP":
        s += 1
    else:
        f += 1
print(p, f, s)
EOF
)
    read -r p f s <<<"$counts"
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

# build_and_test DIR MESON-OPTIONS...: a fresh configure, build and full test run. A failed
# configure or build counts as one failure.
# TEST_ARGS: extra arguments of meson test.
build_and_test() {
    local dir="$1"
    shift
    echo "== $dir: meson setup $*"
    rm -rf "$dir"
    if ! meson setup "$dir" -Dwerror=true "$@"; then
        echo "== $dir: configure FAILED"
        failed=$((failed + 1))
        return
    fi
    if ! ninja -C "$dir" -j "$JOBS"; then
        echo "== $dir: build FAILED"
        failed=$((failed + 1))
        return
    fi
    echo "== $dir: meson test"
    meson test -C "$dir" --num-processes "$JOBS" --print-errorlogs $TEST_ARGS
    count_results "$dir"
}

start=$(date +%s)
if ! install_missing; then
    echo "== could not install the required packages"
    echo "0 passed, 1 failed, 0 skipped"
    exit 1
fi

TEST_ARGS=""
build_and_test build-test
# Instrumented code runs several times slower, fork-heavy tests (shim xerbla: ~4000 forks) far
# more: the same tests get ten times their time limit.
TEST_ARGS="--timeout-multiplier 10"
build_and_test build-test-asan -Dcuda=disabled -Db_sanitize=address,undefined -Db_lundef=false \
    -Dbuildtype=debugoptimized

echo "== finished in $(($(date +%s) - start)) s on $JOBS cores"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
