#!/usr/bin/env bash
# The contract's own regression files (the Makefile's REGRESS list, sql/*.sql against
# expected/*.out) run through the coordinator of a three-node Citus cluster
# (test/citus/cluster.sh) on which pg_baton is distributed: setup.sql runs with
# "SELECT baton.distribute()" right after its CREATE EXTENSION, and so do the files that
# drop and create the extension again. An expected file in test/citus/expected/, when
# there is one, replaces the file's own. The differences are left in
# /tmp/pg_baton-citus-regress.diffs; docs/scale-out.md lists those found and what was
# done about each. Not part of test/run-all.sh: it finds differences, it is not a gate.
#
#   bash test/citus/regress.sh      (PG_CONFIG, BATON_CITUS_PORT as for run.sh; the first
#                                    port tried defaults to 56660; BATON_KEEP_LOGS=1
#                                    keeps the work directory; BATON_CITUS_REGRESS_TESTS
#                                    names the files to run, default all: boundary's
#                                    loops of 3000 calls take many minutes there)
#
# Without Citus it prints one line saying so and exits 0. The last line is
# "N passed, N failed" (one per regression file).
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
PG_CONFIG=${PG_CONFIG:-pg_config}
LIBDIR=$("$PG_CONFIG" --pkglibdir)
if [[ ! -f $LIBDIR/citus.so ]]; then
    echo "citus-regress: skipped: Citus is not installed ($LIBDIR/citus.so is absent)"
    exit 0
fi
BINDIR=$("$PG_CONFIG" --bindir)
export PATH=$BINDIR:$PATH
PGXS_DIR=$(dirname "$("$PG_CONFIG" --pgxs)")
PG_REGRESS=$PGXS_DIR/../test/regress/pg_regress
# shellcheck source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"
# shellcheck source=test/citus/cluster.sh
source "$ROOT/test/citus/cluster.sh"

p0=$(citus_free_ports "${BATON_CITUS_PORT:-56660}" 3) || { echo "citus-regress: no free port"; echo "0 passed, 1 failed"; exit 1; }
BASE=$(mktemp -d /tmp/pg_baton-citus-regress.XXXXXX)
chmod 0755 "$BASE"
WORK=$BASE/work
cleanup() {
    citus_cluster_stop "$BASE/c" >/dev/null 2>&1
    if [[ ${BATON_KEEP_LOGS:-0} == 1 ]]; then echo "citus-regress: kept $WORK"; else rm -rf -- "$BASE"; fi
}
trap cleanup EXIT
if ! citus_cluster_start "$BASE/c" "$p0" >"$BASE/start.log" 2>&1; then
    cat "$BASE/start.log"
    echo "citus-regress: the cluster did not start"
    echo "0 passed, 1 failed"
    exit 1
fi
echo "citus-regress: coordinator $PGHOST:$PGPORT"

# The input directory: the regression files, with baton.distribute() after every
# CREATE EXTENSION pg_baton of the regression database (not of hostile_json's own
# databases, which have no Citus), in the files and in their expected output.
mkdir -p "$WORK/sql" "$WORK/expected" "$WORK/results"
tests=$(make -s -C "$ROOT" -f - print-regress <<'MK'
include Makefile
print-regress:
	@echo $(REGRESS)
MK
)
tests=${BATON_CITUS_REGRESS_TESTS:-$tests}
for t in $tests; do
    sed '/^\\c hj_/,/^\\c :hj_home/!s/^CREATE EXTENSION pg_baton;$/CREATE EXTENSION pg_baton;\nSELECT baton.distribute();/' \
        "$ROOT/sql/$t.sql" >"$WORK/sql/$t.sql"
    if [[ -f $ROOT/test/citus/expected/$t.out ]]; then
        cp "$ROOT/test/citus/expected/$t.out" "$WORK/expected/$t.out"
    else
        awk 'BEGIN { skip = 0 }
             /^\\c hj_/ { skip = 1 } /^\\c :hj_home/ { skip = 0 }
             { print }
             !skip && $0 == "CREATE EXTENSION pg_baton;" { print "SELECT baton.distribute();"; print " distribute "; print "------------"; print " "; print "(1 row)"; print "" }' \
            "$ROOT/expected/$t.out" >"$WORK/expected/$t.out"
    fi
done

# pg_regress against the coordinator's existing database: Citus does not propagate
# CREATE DATABASE by default, so the database is the one the cluster was made with.
# shellcheck disable=SC2086  # $tests: one word per file
(cd "$WORK" && "$PG_REGRESS" --inputdir="$WORK" --outputdir="$WORK" --bindir="$BINDIR" \
    --host="$PGHOST" --port="$PGPORT" --user=postgres --use-existing --dbname=postgres $tests) >"$WORK/regress.log" 2>&1
grep -E '^(ok|not ok|test )' "$WORK/regress.log" | sed 's/ *[0-9]* ms$//'
pass=$(grep -cE '^(ok|     ok|test .* \.\.\. ok)' "$WORK/regress.log")
fail=$(grep -cE '(FAILED|failed \(ignored\)|^not ok)' "$WORK/regress.log")
[[ -f $WORK/regression.diffs ]] && cp "$WORK/regression.diffs" /tmp/pg_baton-citus-regress.diffs
echo "$pass passed, $fail failed"
((fail == 0))
