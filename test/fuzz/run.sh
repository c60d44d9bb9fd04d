#!/usr/bin/env bash
# Builds the libFuzzer targets of the pure C++ core (test/fuzz/fuzz_*.cpp) with clang++,
# ASan and UBSan into build-fuzz/, and runs each for a while from its seed corpus.
#
#   bash test/fuzz/run.sh [--short | --long] [target...]
#     --short   about 20 s per target (the default; what test/run-all.sh runs)
#     --long    10 minutes per target
#     BATON_FUZZ_SECONDS=N overrides the time per target either way.
#
# Seeds come from test/fuzz/corpus/<target>/ (read only); what libFuzzer finds goes into
# a scratch corpus under build-fuzz/corpus/<target>/ that persists between runs, so a
# later run starts from the coverage an earlier one reached. A crash, a sanitizer report
# or a failed property (FUZZ_CHECK) leaves its input in build-fuzz/artifacts/ and fails
# the target. The last line is "N passed, N failed", one count per target.
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1

seconds=20
targets=()
for arg in "$@"; do
    case $arg in
        --short) seconds=20 ;;
        --long) seconds=600 ;;
        -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
        -*) echo "run.sh: unknown option $arg" >&2; exit 2 ;;
        *) targets+=("$arg") ;;
    esac
done
seconds=${BATON_FUZZ_SECONDS:-$seconds}
((${#targets[@]} > 0)) || targets=(fuzz_json fuzz_definition fuzz_decision fuzz_chain fuzz_schedule)

CXX_FUZZ=${BATON_FUZZ_CXX:-$(command -v clang++ || command -v clang++-14 || true)}
BUILD=$ROOT/build-fuzz
if [[ -z $CXX_FUZZ ]]; then
    echo "fuzz: no clang++ (scripts/install-deps.sh installs clang)"
    echo "0 passed, 1 failed"
    exit 1
fi

mkdir -p "$BUILD"
echo "fuzz: building ${targets[*]} with $CXX_FUZZ into $BUILD"
if ! cmake -S . -B "$BUILD" -DCMAKE_CXX_COMPILER="$CXX_FUZZ" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DBATON_FUZZ=ON -DBATON_WERROR=ON >"$BUILD/configure.log" 2>&1; then
    cat "$BUILD/configure.log"
    echo "fuzz: CMake configure failed"
    echo "0 passed, ${#targets[@]} failed"
    exit 1
fi
if ! cmake --build "$BUILD" --target "${targets[@]}" -j 2; then
    echo "fuzz: build failed"
    echo "0 passed, ${#targets[@]} failed"
    exit 1
fi

passed=0
failed=0
mkdir -p "$BUILD/artifacts"
for t in "${targets[@]}"; do
    seeds=$ROOT/test/fuzz/corpus/$t
    work=$BUILD/corpus/$t
    mkdir -p "$work"
    log=$BUILD/$t.log
    echo "fuzz: $t for ${seconds}s (seeds: $(find "$seeds" -type f 2>/dev/null | wc -l))"
    # -rss_limit_mb bounds a runaway input; -timeout a hang (a slow input is a failure).
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        timeout -k 10 $((seconds + 120)) "$BUILD/test/fuzz/$t" -max_total_time="$seconds" \
        -timeout=10 -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
        -artifact_prefix="$BUILD/artifacts/$t-" "$work" "$seeds" >"$log" 2>&1
    rc=$?
    execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo '?')
    cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -n 1 | grep -Eo '[0-9]+' || echo '?')
    corpus=$(find "$work" -type f | wc -l)
    if ((rc == 0)); then
        passed=$((passed + 1))
        echo "fuzz: PASS $t: $execs executions in ${seconds}s, coverage $cov edges, corpus $corpus"
    else
        failed=$((failed + 1))
        echo "fuzz: FAIL $t (exit $rc): $execs executions; log $log"
        grep -E 'FUZZ PROPERTY FAILED|ERROR: (AddressSanitizer|libFuzzer)|runtime error|Test unit written' \
            "$log" | head -n 20
        tail -n 40 "$log"
    fi
done
echo "$passed passed, $failed failed"
((failed == 0))
