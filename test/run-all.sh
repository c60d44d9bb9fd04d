#!/usr/bin/env bash
# THE test command of pg_baton:   bash test/run-all.sh     (as root, from anywhere)
#
#   1. scripts/install-deps.sh          (fast no-op when everything is installed)
#   2. make -j2 WERROR=1 && make install (PGXS)
#   3. CMake build into build/ and ctest (GoogleTest unit tests, test/unit/*_test.cpp);
#      the same unit tests built with ASan + UBSan into build-asan/ (kind "unit-asan")
#   4. a throwaway cluster (scripts/cluster.sh), stopped on exit
#   5. make installcheck                 (pg_regress REGRESS, then pg_isolation_regress),
#      then again with PGOPTIONS='-c baton.direct_access=off' (kinds "regress-spi",
#      "isolation-spi": the SPI fallback of claim, finish and finish_batch)
#   6. the later suites (run_suite lines at the end: fault, ..., model, citus), each when it exists
#   7. each other major (BATON_MAJORS, default 18): the server built from Debian's source
#      package once per machine (scripts/build-postgres.sh), pg_baton built in
#      build-pg/MAJOR, then 5 and the server suites of 6 on it, and pg_upgrade from 15
#      (kinds "KIND@MAJOR")
#
# The last line of output is always "N passed, N failed" (totals over every kind; a stage
# that errored without reporting tests counts as one failure). Exit status is non-zero
# when anything failed.
#
# Environment (all optional):
#   BATON_SANITIZE=0            skip the unit tests under ASan + UBSan (build-asan/)
#   BATON_TEST_PORT=N           first port to try for the cluster (default 54329)
#   BATON_EXTRA_CONF=$'a=1\nb=2' extra postgresql.conf lines for the cluster
#   BATON_INSTALLCHECK_TIMEOUT  seconds (default 900); BATON_SUITE_TIMEOUT (default 900,
#                               per later suite)
#   BATON_DIFF_LINES            lines of each diff file printed on failure (default 4000)
#   BATON_KEEP_LOGS=1           keep the per-stage logs directory
#   BATON_MAJORS="18"           the other majors to build and test ("" for none)
#   BATON_PG_ROOT=DIR           where scripts/build-postgres.sh puts them
set -euo pipefail
exec 2>&1 # one ordered stream: the summary stays the last line whatever CI captures

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source-path=SCRIPTDIR/.. source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"

JOBS=$(nproc 2>/dev/null || echo 2)
LOGDIR=$(mktemp -d /tmp/pg_baton-run.XXXXXX)
CLUSTER=""
BUILD_OK=0
START_SECONDS=$SECONDS

# --- results ---------------------------------------------------------------------------
KINDS=()
declare -A K_PASS=() K_FAIL=() K_NOTE=()
STAGE_ERRORS=()
FAILED_CHECKS=() # "KIND: the check's line", repeated in the summary where CI's tail shows it

# add_result KIND PASSED FAILED [NOTE]
add_result() {
    local kind=$1
    if [[ -z ${K_PASS[$kind]+x} ]]; then
        KINDS+=("$kind")
        K_PASS[$kind]=0
        K_FAIL[$kind]=0
        K_NOTE[$kind]=""
    fi
    K_PASS[$kind]=$((K_PASS[$kind] + $2))
    K_FAIL[$kind]=$((K_FAIL[$kind] + $3))
    if [[ -n ${4:-} ]]; then
        K_NOTE[$kind]="${K_NOTE[$kind]:+${K_NOTE[$kind]}; }$4"
    fi
}

stage_error() {
    STAGE_ERRORS+=("$1")
    echo "run-all: STAGE ERROR: $1"
}

banner() {
    printf '\n===== %s (t+%ds) =====\n' "$*" $((SECONDS - START_SECONDS))
}

# shellcheck disable=SC2317  # (called from the EXIT trap)
print_summary() {
    local kind total_pass=0 total_fail=0
    echo
    echo "===== summary ($((SECONDS - START_SECONDS)) s) ====="
    for kind in "${KINDS[@]}"; do
        printf '  %-15s %4d passed, %4d failed%s\n' "$kind:" "${K_PASS[$kind]}" \
            "${K_FAIL[$kind]}" "${K_NOTE[$kind]:+  (${K_NOTE[$kind]})}"
        total_pass=$((total_pass + K_PASS[$kind]))
        total_fail=$((total_fail + K_FAIL[$kind]))
    done
    if ((${#FAILED_CHECKS[@]} > 0)); then
        local f
        echo "  failed checks:"
        for f in "${FAILED_CHECKS[@]}"; do
            printf '    %s\n' "${f:0:300}"
        done
    fi
    if ((${#STAGE_ERRORS[@]} > 0)); then
        local e
        for e in "${STAGE_ERRORS[@]}"; do
            printf '  %-15s %s\n' "error:" "$e"
        done
        total_fail=$((total_fail + ${#STAGE_ERRORS[@]}))
    fi
    TOTAL_FAIL=$total_fail
    printf '%d passed, %d failed\n' "$total_pass" "$total_fail"
}

# shellcheck disable=SC2317
on_exit() {
    local rc=$?
    trap - EXIT
    set +e
    if [[ -n $CLUSTER && -d $CLUSTER ]]; then
        cluster_stop "$CLUSTER" || echo "run-all: could not remove cluster $CLUSTER"
    fi
    if [[ ${BATON_KEEP_LOGS:-0} == 1 ]]; then
        echo "run-all: logs kept in $LOGDIR"
    else
        rm -rf -- "$LOGDIR"
    fi
    if ((rc != 0 && ${#STAGE_ERRORS[@]} == 0)); then
        stage_error "run-all.sh stopped unexpectedly (exit $rc)"
    fi
    TOTAL_FAIL=0
    print_summary
    if ((TOTAL_FAIL > 0)); then
        exit 1
    fi
    exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# print_file FILE: a diff or log file, capped, for the CI log.
print_file() {
    local f=$1 max=${BATON_DIFF_LINES:-4000} n
    [[ -s $f ]] || return 0
    n=$(wc -l <"$f")
    echo "----- $f ($n lines) -----"
    head -n "$max" "$f"
    if ((n > max)); then
        echo "----- ($((n - max)) more lines in $f) -----"
    fi
}

# count_pg_regress LOG: per-test lines of pg_regress / pg_isolation_regress, in 15's words
#   "test NAME   ... ok        12 ms"   or, in a parallel group, "     NAME   ... FAILED   3 ms"
# and in the TAP lines of 16 and later
#   "ok 1         - NAME     137 ms"    "not ok 4     - NAME    227 ms"   (a group: "+ NAME")
# A line is attributed to the suite whose "+++ regress|isolation install-check" banner
# (printed by PGXS before each run) came last. Prints "SUITE PASSED FAILED IGNORED NAMES".
count_pg_regress() {
    awk '
        /^(# )?\+\+\+ regress install-check/   { mode = "regress";   next }
        /^(# )?\+\+\+ isolation install-check/ { mode = "isolation"; next }
        mode != "" && match($0, /^(test |     )[^ ]+ +\.\.\. /) {
            name = ($1 == "test") ? $2 : $1
            rest = substr($0, RSTART + RLENGTH)
            seen[mode] = 1
            if (rest ~ /^ok/)                      pass[mode]++
            else if (rest ~ /^failed \(ignored\)/) ign[mode]++
            else if (rest ~ /^FAILED/)           { fail[mode]++; names[mode] = names[mode] " " name }
            else                                 { fail[mode]++; names[mode] = names[mode] " " name "(?)" }
        }
        mode != "" && match($0, /^(not )?ok +[0-9]+ +[-+] +[^ ]+/) {
            name = $0; sub(/^(not )?ok +[0-9]+ +[-+] +/, "", name); sub(/ .*/, "", name)
            seen[mode] = 1
            if ($0 ~ /# \(ignored\)/)   ign[mode]++
            else if ($1 == "ok")         pass[mode]++
            else                       { fail[mode]++; names[mode] = names[mode] " " name }
        }
        END {
            n = split("regress isolation", order, " ")
            for (i = 1; i <= n; i++) {
                m = order[i]
                if (seen[m]) printf "%s %d %d %d%s\n", m, pass[m], fail[m], ign[m], names[m]
            }
        }' "$1"
}

[[ $(id -u) -eq 0 ]] || echo "run-all: WARNING: not root; make install and the cluster need root"

# --- 1. dependencies -------------------------------------------------------------------
banner "dependencies"
if ! bash scripts/install-deps.sh; then
    stage_error "scripts/install-deps.sh failed"
    exit 1
fi

# --- 2. PGXS build and install ---------------------------------------------------------
banner "PGXS build (make -j2 WERROR=1) and install"
# PGXS tracks no header dependencies: rebuild from scratch when a header is newer than the
# oldest object file.
oldest_obj=$(find src -name '*.o' -printf '%T@ %p\n' 2>/dev/null | sort -n | head -n 1 \
    | cut -d' ' -f2- || true)
if [[ -n $oldest_obj ]] && [[ -n $(find src \( -name '*.h' -o -name '*.hpp' \) \
    -newer "$oldest_obj" -print -quit) ]]; then
    echo "run-all: headers changed since the last build: make clean"
    make clean >/dev/null
fi
if make -j2 WERROR=1 && make install; then
    BUILD_OK=1
else
    stage_error "PGXS build or install failed"
fi

# --- 3. CMake build and unit tests -----------------------------------------------------
# count_ctest KIND LOG RC: one result from ctest's summary line.
count_ctest() {
    local kind=$1 log=$2 rc=$3 line failed
    line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" \
        | tail -n 1 || true)
    if [[ $line =~ ([0-9]+)\ tests?\ failed\ out\ of\ ([0-9]+) ]]; then
        failed=${BASH_REMATCH[1]}
        add_result "$kind" $((BASH_REMATCH[2] - failed)) "$failed"
        if ((rc != 0 && failed == 0)); then
            stage_error "ctest ($kind) exited $rc"
        fi
    elif grep -q 'No tests were found' "$log"; then
        add_result "$kind" 0 0 "no unit tests"
        ((rc == 0)) || stage_error "ctest ($kind) exited $rc"
    else
        stage_error "ctest ($kind) exited $rc without a summary"
    fi
}

banner "CMake build and unit tests (ctest)"
# build/ is never sanitized: it is the plain build (and the module's .so path).
if cmake -S . -B build -DBATON_WERROR=ON -DBATON_SANITIZE=OFF && cmake --build build -j "$JOBS"; then
    rc=0
    ctest --test-dir build --output-on-failure -j "$JOBS" 2>&1 | tee "$LOGDIR/ctest.log" || rc=$?
    count_ctest unit "$LOGDIR/ctest.log" "$rc"
else
    stage_error "CMake configure or build failed"
fi

# The same unit tests under AddressSanitizer + UndefinedBehaviorSanitizer, in build-asan/
# (only baton_core and the tests: the server never loads the sanitizer runtimes).
if [[ ${BATON_SANITIZE:-1} != 0 ]]; then
    banner "unit tests under ASan + UBSan (build-asan, ctest)"
    if cmake -S . -B build-asan -DBATON_WERROR=ON -DBATON_SANITIZE=ON \
        && cmake --build build-asan --target baton_unit_tests -j "$JOBS"; then
        rc=0
        ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
            UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
            ctest --test-dir build-asan --output-on-failure -j "$JOBS" 2>&1 \
            | tee "$LOGDIR/ctest-asan.log" || rc=$?
        count_ctest unit-asan "$LOGDIR/ctest-asan.log" "$rc"
    else
        stage_error "CMake configure or build with sanitizers failed"
    fi
fi

if ((BUILD_OK == 0)); then
    echo "run-all: the extension did not build; skipping the server tests"
    exit 1
fi

# --- 4. throwaway cluster --------------------------------------------------------------
banner "throwaway cluster"
# Preloaded, as in production: the claim hints live in shared memory (docs/internals/performance.md).
# No background reaper: the suites reap when they mean to (test/reaper covers it).
extra_conf=("shared_preload_libraries = 'pg_baton'" "baton.reaper_databases = ''")
if [[ -n ${BATON_EXTRA_CONF:-} ]]; then
    mapfile -t -O 2 extra_conf <<<"$BATON_EXTRA_CONF"
fi
CLUSTER=$(mktemp -d /tmp/pg_baton-test.XXXXXX)
port=$(cluster_free_port "${BATON_TEST_PORT:-54329}")
if ! cluster_start "$CLUSTER" "$port" "${extra_conf[@]}"; then
    stage_error "could not start a cluster"
    exit 1
fi
export BATON_REPO_ROOT=$ROOT
export PG_CONFIG=${PG_CONFIG:-pg_config}
psql -X -q -At -c 'select version()'

# --- 5. make installcheck (REGRESS, then ISOLATION), on both paths --------------------
# installcheck_pass SUFFIX [OPTIONS]: make installcheck in IC_DIR (the source tree, or a
# major's out-of-tree build: run_major) with OPTIONS added to PGOPTIONS,
# counted as regress$SUFFIX and isolation$SUFFIX; a failure's diffs and the server log's
# last lines are printed at once (the next pass replaces the diff files).
installcheck_pass() {
    local suffix=$1 options=${2:-} rc=0 suite passed failed ignored names note
    local ic_log=$LOGDIR/installcheck$suffix.log ic_timeout=${BATON_INSTALLCHECK_TIMEOUT:-900}
    local pgoptions=${PGOPTIONS:-}
    [[ -z $options ]] || pgoptions="${pgoptions:+$pgoptions }$options"
    local ic=(make -C "$IC_DIR" -f "$ROOT/Makefile" installcheck)
    (cd "$IC_DIR" && rm -rf results output_iso regression.diffs regression.out)
    PGOPTIONS=$pgoptions timeout -k 10 "$ic_timeout" "${ic[@]}" 2>&1 | tee "$ic_log" || rc=$?
    # PGXS skips the isolation tests once the regression tests fail; run them anyway so
    # the log shows both.
    if ((rc != 0)) && compgen -G 'test/isolation/specs/*.spec' >/dev/null \
        && ! grep -Eq '^(# )?[+]{3} isolation install-check' "$ic_log"; then
        echo "run-all: installcheck$suffix stopped before the isolation tests; running them alone"
        PGOPTIONS=$pgoptions timeout -k 10 "$ic_timeout" "${ic[@]}" REGRESS= 2>&1 \
            | tee -a "$ic_log" || true
    fi
    ((rc != 124)) || echo "run-all: make installcheck$suffix timed out after ${ic_timeout}s"

    local ic_failed=0 ic_seen=0
    while read -r suite passed failed ignored names; do
        note=""
        ((ignored == 0)) || note="$ignored ignored"
        [[ -z $names ]] || note="${note:+$note; }FAILED:$names"
        add_result "$suite$suffix" "$passed" "$failed" "$note"
        ic_failed=$((ic_failed + failed))
        ic_seen=$((ic_seen + passed + failed + ignored))
    done < <(count_pg_regress "$ic_log")
    if ((ic_seen == 0)); then
        stage_error "make installcheck$suffix ran no tests (exit $rc)"
    elif ((rc != 0 && ic_failed == 0)); then
        stage_error "make installcheck$suffix exited $rc without a failing test"
    fi
    if ((rc != 0 || ic_failed > 0)); then
        banner "installcheck$suffix failure details"
        print_file "$IC_DIR/regression.diffs"
        print_file "$IC_DIR/output_iso/regression.diffs"
        echo "----- last lines of the server log ($CLUSTER_LOG) -----"
        tail -n 80 "$CLUSTER_LOG" || true
    fi
}

banner "make installcheck (pg_regress, pg_isolation_regress)"
IC_DIR=$ROOT
installcheck_pass ""
# The same expected outputs through the SPI statements that claim, finish and
# finish_batch fall back to (src/pg/deliveries/delivery_store.hpp, src/pg/deliveries/delivery_statements.cpp): kinds regress-spi, isolation-spi.
banner "make installcheck again with baton.direct_access = off (the SPI fallback)"
installcheck_pass -spi "-c baton.direct_access=off"

# --- 6. later suites -------------------------------------------------------------------
# run_suite KIND SCRIPT [ARGS...]: runs a suite against the cluster above (PGHOST, PGPORT,
# PG_CONFIG exported) when its script exists. Its closing "N passed, N failed" line, if
# any, is its count; else one result by exit status. Timeout: BATON_SUITE_TIMEOUT (900 s).
run_suite() {
    local kind=$1 script=$2 rc=0 line fail_line
    shift 2
    [[ -f $script ]] || return 0
    banner "$kind suite ($script $*)"
    timeout -k 10 "${BATON_SUITE_TIMEOUT:-900}" bash "$script" "$@" 2>&1 \
        | tee "$LOGDIR/$kind.log" | sed -u "s/^/[$kind] /" || rc=$?
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$LOGDIR/$kind.log" | tail -n 1 || true)
    while IFS= read -r fail_line; do
        FAILED_CHECKS+=("$kind: $fail_line")
    done < <(grep -E '^ *(not ok|FAIL)' "$LOGDIR/$kind.log" | head -n 10 || true)
    if [[ $line =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        add_result "$kind" "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
        if ((rc != 0 && BASH_REMATCH[2] == 0)); then
            stage_error "$script exited $rc"
        fi
    elif ((rc == 0)); then
        add_result "$kind" 1 0 "no count reported"
    else
        add_result "$kind" 0 1 "exit $rc, no count reported"
    fi
}

# server_suites SUFFIX: the suites that run against a server, each counted as KIND$SUFFIX
# (each test/<suite>/run.sh prints "N passed, N failed" last). Citus' suites start a
# three-node cluster of their own, or say in one line that they were skipped without it.
server_suites() {
    local x=$1
    run_suite "fault$x" test/fault/run.sh --short
    run_suite "unpreloaded$x" test/unpreloaded/run.sh
    run_suite "hints$x" test/hints/run.sh
    run_suite "reports$x" test/reports/run.sh
    run_suite "metrics$x" test/metrics/run.sh
    run_suite "python$x" test/python/run.sh
    run_suite "node$x" test/node/run.sh
    run_suite "docs$x" test/docs/run.sh
    run_suite "clients$x" test/clients/run.sh
    run_suite "reaper$x" test/reaper/run.sh
    run_suite "sweep$x" test/sweep/run.sh
    run_suite "upgrade$x" test/upgrade/run.sh
    run_suite "tooling$x" test/tooling/run.sh
    run_suite "differential$x" test/differential/run.sh
    run_suite "citus$x" test/citus/run.sh
    run_suite "citus-isolation$x" test/citus/isolation.sh
    run_suite "citus-reaper$x" test/citus/reaper.sh
    run_suite "citus-wakeups$x" test/citus/wakeups.sh
    run_suite "citus-fault$x" test/citus/fault.sh
    run_suite "citus-upgrade$x" test/citus/upgrade.sh
    run_suite "citus-grow$x" test/citus/grow.sh
    run_suite "citus-rebalance$x" test/citus/rebalance.sh
    run_suite "citus-clients$x" test/citus/clients.sh
    run_suite "citus-local$x" test/citus/local.sh
    run_suite "citus-regress$x" test/citus/regress.sh
}

server_suites ""
# The web console in a real browser, on this major.
run_suite console test/console/run.sh
# The pure core and the single-server figures, once.
run_suite fuzz test/fuzz/run.sh --short
run_suite memory test/memory/run.sh
run_suite valgrind test/valgrind/run.sh
run_suite model test/model/run.sh
run_suite package test/package/run.sh

# --- 7. the other PostgreSQL majors ----------------------------------------------------
# run_major MAJOR: the server built from Debian's source package once per machine
# (scripts/build-postgres.sh, reused while present), pg_baton built out of tree in
# build-pg/MAJOR with WERROR=1 and installed into it, then, on a cluster of its own,
# pg_regress and the isolation specs on both paths and every server suite, each kind
# counted as KIND@MAJOR.
run_major() {
    local major=$1 pgc builddir=$ROOT/build-pg/$1
    banner "PostgreSQL $major: the server (scripts/build-postgres.sh), pg_baton in build-pg/$major"
    if ! pgc=$(bash scripts/build-postgres.sh "$major"); then
        stage_error "PostgreSQL $major: scripts/build-postgres.sh failed"
        return 0
    fi
    mkdir -p "$builddir"
    if ! { make -C "$builddir" -f "$ROOT/Makefile" PG_CONFIG="$pgc" -j "$JOBS" WERROR=1 \
        && make -C "$builddir" -f "$ROOT/Makefile" PG_CONFIG="$pgc" install >/dev/null; }; then
        stage_error "PostgreSQL $major: pg_baton did not build or install"
        return 0
    fi
    if [[ -n $CLUSTER && -d $CLUSTER ]]; then
        cluster_stop "$CLUSTER" || true
    fi
    CLUSTER=$(mktemp -d "/tmp/pg_baton-test$major.XXXXXX")
    export PG_CONFIG=$pgc
    PATH=$("$pgc" --bindir):$PATH
    port=$(cluster_free_port "${BATON_TEST_PORT:-54329}")
    if ! cluster_start "$CLUSTER" "$port" "${extra_conf[@]}"; then
        stage_error "PostgreSQL $major: could not start a cluster"
        return 0
    fi
    psql -X -q -At -c 'select version()'
    IC_DIR=$builddir
    banner "PostgreSQL $major: make installcheck"
    installcheck_pass "@$major"
    banner "PostgreSQL $major: make installcheck with baton.direct_access = off"
    installcheck_pass "-spi@$major" "-c baton.direct_access=off"
    server_suites "@$major"
    # pg_upgrade and pg_dump from the system's major into this one.
    BATON_NEW_PG_CONFIG=$pgc run_suite "pg_upgrade@$major" test/majors/upgrade.sh
}

# BATON_MAJORS: the majors besides the system's (default 18; "" for none).
SYSTEM_PG_CONFIG=$(command -v "$PG_CONFIG")
export BATON_OLD_PG_CONFIG=$SYSTEM_PG_CONFIG
for major in ${BATON_MAJORS-18}; do
    run_major "$major"
done

exit 0
