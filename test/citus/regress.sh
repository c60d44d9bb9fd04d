#!/usr/bin/env bash
# The contract's own regression files (the Makefile's REGRESS list but two, see below;
# sql/*.sql) run through the coordinator of a three-node Citus cluster (test/citus/cluster.sh) on
# which pg_baton is distributed, and compared with their expected output: a gate, part
# of test/run-all.sh (citus-regress). setup.sql runs with "SELECT baton.distribute()"
# right after its CREATE EXTENSION, and so do the files that drop and create the
# extension again (dropping it the way docs/guide/scale-out.md says a distributed install is
# removed). The expected output is test/citus/expected/FILE.out when there is one (each
# of its differences from expected/FILE.out is one docs/internals/citus.md explains), else
# the file's own. Run ids, random on Citus, are compared by the order they first appear
# in, and a few names of the run's own are masked (normalize below). The differences are left in /tmp/pg_baton-citus-regress.diffs.
#
#   bash test/citus/regress.sh      (PG_CONFIG, BATON_CITUS_PORT as for run.sh; the first
#                                    port tried defaults to 56660; BATON_KEEP_LOGS=1
#                                    keeps the work directory; BATON_CITUS_REGRESS_TESTS
#                                    names the files to run)
#
# Without Citus it prints one line saying so and exits 0. One line per file, "ok" or
# "FAIL" with pg_regress' time for it; the last line is "N passed, N failed".
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/citus/cluster.sh
source "$ROOT/test/citus/cluster.sh"
citus_require citus-regress
PGXS_DIR=$(dirname "$("$PG_CONFIG" --pgxs)")
PG_REGRESS=$PGXS_DIR/../test/regress/pg_regress

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

# The input directory: the regression files as they run on Citus (citus_sql), and the
# expected output: test/citus/expected/FILE.out when there is one (reviewed; every
# difference from the file's own is explained in docs/internals/citus.md), else the file's own
# with the same changes (citus_expected).
mkdir -p "$WORK/sql" "$WORK/expected" "$WORK/results" "$WORK/compared"
# (The Makefile first, by name: it finds its sources beside the first makefile given.)
tests=$(make -s -C "$ROOT" -f Makefile -f - print-regress <<'MK'
print-regress:
	@echo $(REGRESS)
MK
)
# Left out: hostile_arguments, whose 1009 cases each digest the pg_baton tables before,
# during and after the call (through the coordinator most of a case is the refused
# call's round trips and reconnections, as long as the rest of the gate together:
# docs/internals/performance.md, "The regression gate on Citus"), for argument checks
# that are the same C++ code on both; and direct_access, whose subject is the direct heap path against
# the SPI one (a distributed install has only the SPI one), told apart by the fence
# trigger's calls counted on the coordinator (on Citus it fires on the workers), with
# triggers and rules of its own on baton.deliveries and pg_baton removed and installed
# again in one transaction (docs/internals/citus.md); executor_duties, the direct path's
# duties, which alters baton.deliveries (a user's foreign key, constraints, domains, a
# publication, the extension's owner) and tells the paths apart the same way;
# schema_version, which installs an older version that is never distributed
# (distribute() is refused there like every call) and drops it again, for a refusal
# made by the same C++ code on every node; key_limits, whose every limit a
# distributed install refuses (0A000, checked by run.sh); and counters, whose counts are
# each node's own (the delegated calls counted on the workers, run.sh sums them).
tests=${BATON_CITUS_REGRESS_TESTS:-$(tr ' ' '\n' <<<"$tests" | grep -vxE 'hostile_arguments|direct_access|executor_duties|schema_version|key_limits|counters' | tr '\n' ' ')}

# A file's Citus form: test/citus/sql/FILE.sed, when there is one, is a sed script applied
# after the changes below; it changes only what a check of the file assumes of one node
# (one sequence, one transaction's now(), a loop's length) and says why, line by line.
# Its expected output is then test/citus/expected/FILE.out.
#
# The changes a file needs on Citus: baton.distribute() after every CREATE EXTENSION
# pg_baton of the regression database (not of hostile_json's own databases, which have
# no Citus); DROP EXTENSION pg_baton CASCADE replaced by the removal procedure of
# docs/guide/scale-out.md (shards first, then the extension and the schema); setup's numbered
# run-id default left out (Citus cannot install it; the comparison numbers run ids
# itself, see normalize); the files' roles created with LOGIN (CREATE ROLE name;
# alone makes a role that may not log in, and a call delegated to a worker connects
# there as the calling role: docs/internals/citus.md).
citus_sql() {
    sed -e '/^\\c hj_/,/^\\c :hj_home/!s/^CREATE EXTENSION pg_baton;$/CREATE EXTENSION pg_baton;\nSELECT baton.distribute();/' \
        -e 's/^DROP EXTENSION pg_baton CASCADE;$/SELECT count(pg_catalog.citus_drop_all_shards(p.logicalrelid, '"'baton'"', c.relname, false)) > 0 AS shards_dropped FROM pg_catalog.pg_dist_partition p JOIN pg_catalog.pg_class c ON c.oid = p.logicalrelid WHERE c.relnamespace = '"'baton'"'::pg_catalog.regnamespace;\nDROP EXTENSION pg_baton CASCADE;\nDROP SCHEMA baton;/' \
        -e '/^CREATE SEQUENCE regress_run_ids;$/,/SET DEFAULT/d' \
        -e 's/^CREATE ROLE \([a-z_0-9]*\);$/CREATE ROLE \1 LOGIN;/'
}
citus_expected() {
    # distribute()'s NOTICE, as a fresh install on the two workers of cluster.sh gives it.
    local notice="NOTICE:  pg_baton distributed: 10 tenant tables, 3 reference tables and 44 functions handed to Citus"
    local detail="DETAIL:  The tenant tables are distributed by tenant over 2 worker nodes, colocated with baton.tenants; every function that takes the tenant first runs on the node that holds it. The shards have the indexes and constraints of their tables, and each worker's ids a range of their own."
    local hint="HINT:  SELECT * FROM citus_tables shows the tables; docs/guide/scale-out.md says what runs where."
    awk -v notice="$notice" -v detail="$detail" -v hint="$hint" 'BEGIN { skip = 0 }
         /^\\c hj_/ { skip = 1 } /^\\c :hj_home/ { skip = 0 }
         /^CREATE SEQUENCE regress_run_ids;$/ { drop = 1 }
         /^CREATE ROLE [a-z_0-9]*;$/ { sub(/;$/, " LOGIN;") }
         !skip && $0 == "DROP EXTENSION pg_baton CASCADE;" {
             print "SELECT count(pg_catalog.citus_drop_all_shards(p.logicalrelid, \x27baton\x27, c.relname, false)) > 0 AS shards_dropped FROM pg_catalog.pg_dist_partition p JOIN pg_catalog.pg_class c ON c.oid = p.logicalrelid WHERE c.relnamespace = \x27baton\x27::pg_catalog.regnamespace;"
             print " shards_dropped "; print "----------------"; print " t"; print "(1 row)"; print ""
             print; print "DROP SCHEMA baton;"; next }
         !drop { print }
         drop && /SET DEFAULT/ { drop = 0 }
         !skip && $0 == "CREATE EXTENSION pg_baton;" { print "SELECT baton.distribute();"; print notice; print detail; print hint; print " distribute "; print "------------"; print " "; print "(1 row)"; print "" }'
}

# Run ids are random on Citus: every UUID of version 4's form (the numbered run ids of
# setup.sql, 00000000-0000-4000-8000-000000000001 ..., have it too) is replaced by
# <run N>, N counting the distinct ones in the order they first appear in the file, in
# the expected output and in the results alike. A file still has to name the same run
# wherever it named the same run. Tenant ids (00000000-0000-0000-...) are not of that
# form. Names of this run's own are masked too: a node's address in Citus' errors
# (<node>: the socket directory and port), the session's temporary schema (pg_temp_N)
# in Citus' warnings, a shard's id in a shard's name (deliveries_<shard>: which shard
# of a multi-shard statement refuses first varies) and a role's oid on a worker, which
# a bound role read through the coordinator is shown as (a number from 16384 to 19999
# that ends a row or fills a column: <role oid>).
normalize() {
    sed -e "s|$PGHOST:[0-9]*|<node>|g" -e 's/pg_temp_[0-9][0-9]*/pg_temp_N/g' \
        -e 's/\([a-z]\)_10[0-9][0-9][0-9][0-9]\b/\1_<shard>/g' -e 's/| 1[6-9][0-9][0-9][0-9]$/| <role oid>/' -e 's/| *1[6-9][0-9][0-9][0-9] |/| <role oid> |/g' | awk 'BEGIN {
        h = "[0-9a-f]"; h4 = h h h h
        uuid = h4 h4 "-" h4 "-4" h h h "-[89ab]" h h h "-" h4 h4 h4
    }
    {
        out = ""; line = $0
        while (match(line, uuid)) {
            id = substr(line, RSTART, RLENGTH)
            if (!(id in label)) label[id] = "<run " (++n) ">"
            out = out substr(line, 1, RSTART - 1) label[id]
            line = substr(line, RSTART + RLENGTH)
        }
        print out line
    }'
}

for t in $tests; do
    if [[ -f $ROOT/test/citus/sql/$t.sed ]]; then
        citus_sql <"$ROOT/sql/$t.sql" | sed -f "$ROOT/test/citus/sql/$t.sed" >"$WORK/sql/$t.sql"
    else
        citus_sql <"$ROOT/sql/$t.sql" >"$WORK/sql/$t.sql"
    fi
    if [[ -f $ROOT/test/citus/expected/$t.out ]]; then
        cp "$ROOT/test/citus/expected/$t.out" "$WORK/expected/$t.out"
    else
        citus_expected <"$ROOT/expected/$t.out" >"$WORK/expected/$t.out"
    fi
done

# pg_regress against the coordinator's existing database: Citus does not propagate
# CREATE DATABASE by default, so the database is the one the cluster was made with.
# It runs the files and writes their results; the verdict is this script's, on the
# normalized files.
# shellcheck disable=SC2086  # $tests: one word per file
(cd "$WORK" && "$PG_REGRESS" --inputdir="$WORK" --outputdir="$WORK" --bindir="$BINDIR" \
    --host="$PGHOST" --port="$PGPORT" --user=postgres --use-existing --dbname=postgres $tests) >"$WORK/regress.log" 2>&1
: >"$WORK/regression.diffs"
pass=0 fail=0
for t in $tests; do
    normalize <"$WORK/expected/$t.out" >"$WORK/compared/$t.expected"
    normalize <"$WORK/results/$t.out" >"$WORK/compared/$t.out" 2>/dev/null
    ms=$(sed -n "s/^\(not \)\{0,1\}ok .* $t  *\([0-9]*\) ms$/\2/p; s/^test $t  *\.\.\. .* \([0-9]*\) ms$/\1/p" "$WORK/regress.log" | head -n 1)
    if diff -u "$WORK/compared/$t.expected" "$WORK/compared/$t.out" >>"$WORK/regression.diffs"; then
        pass=$((pass + 1)); echo "ok   - $t (${ms:-?} ms)"
    else
        fail=$((fail + 1)); echo "FAIL - $t (${ms:-?} ms)"
    fi
done
((fail > 0)) && cp "$WORK/regression.diffs" /tmp/pg_baton-citus-regress.diffs && echo "citus-regress: differences in /tmp/pg_baton-citus-regress.diffs"
echo "$pass passed, $fail failed"
((fail == 0))
