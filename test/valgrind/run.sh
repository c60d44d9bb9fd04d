#!/usr/bin/env bash
# claim, finish and finish_batch under valgrind memcheck: one single-user backend per
# path (baton.direct_access on, then off), each running test/valgrind/calls.sql. The
# direct path reads tuples and index entries through Postgres' access methods from C++;
# an invalid read or a use of uninitialised memory there is an error here. Known
# Postgres reports (partly initialized WAL pages) are suppressed by wal.supp.
# Prints "N passed, N failed" last.         bash test/valgrind/run.sh
set -uo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/test/valgrind
# shellcheck source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"
pass=0 fail=0
if ! command -v valgrind >/dev/null; then
    echo "valgrind: not installed"
    echo "0 passed, 1 failed"
    exit 1
fi
BINDIR=$(_cluster_bindir) || { echo "0 passed, 1 failed"; exit 1; }
DIR=$(mktemp -d /tmp/pg_baton-valgrind.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
chmod 0777 "$DIR"
cp "$HERE/calls.sql" "$HERE/wal.supp" "$DIR/"
chmod 0644 "$DIR"/*
as_owner() { if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
as_owner "$BINDIR/initdb" -D "$DIR/data" >/dev/null 2>&1 || { echo "initdb failed"; echo "0 passed, 1 failed"; exit 1; }
for mode in on off; do
    log=$DIR/memcheck-$mode.log
    as_owner timeout 900 valgrind --quiet --error-exitcode=3 --suppressions="$DIR/wal.supp" --log-file="$log" \
        "$BINDIR/postgres" --single -D "$DIR/data" -c shared_preload_libraries=pg_baton \
        -c baton.direct_access="$mode" postgres <"$DIR/calls.sql" >"$DIR/out-$mode.txt" 2>&1
    rc=$?
    errors=$(grep -c '^==[0-9]*== [A-Z]' "$log" || true)
    finished=$(grep -c 'status = "finished"' "$DIR/out-$mode.txt" || true)
    if ((rc == 0 && errors == 0 && finished > 0)); then
        pass=$((pass + 1)); echo "ok   memcheck, baton.direct_access = $mode: no error"
    else
        fail=$((fail + 1)); echo "FAIL memcheck, baton.direct_access = $mode: exit $rc, $errors report lines"
        head -n 60 "$log"; tail -n 20 "$DIR/out-$mode.txt"
    fi
done
echo "$pass passed, $fail failed"
((fail == 0))
