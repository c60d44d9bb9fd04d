#!/usr/bin/env bash
# The claim hint's life on one server (pg/deliveries/claim_hints.hpp), on a cluster of its
# own, preloaded, that allows prepared transactions. A transaction holds the horizon
# throughout, so that the dead index entries of claimed rows stay in ready_pkey: a claim
# that starts from the top reads them again, a hinted one passes them. What a claim
# reads is idx_tup_read of ready_pkey (each claim a connection of its own, whose
# statistics reach the shared ones when it ends). Checks:
#   - a claim after 1,000 rows claimed and finished gets the next row, and reads few
#     entries;
#   - a transaction that PREPAREs after writing the target turns its hint off: once it is
#     committed (COMMIT PREPARED, a second later), its row comes first, the next claim
#     reads from the top, the one after few entries again; while one remains, claims read
#     from the top and do not see its row; once it is committed, the same as above;
#   - the extension dropped and created again, the same tenant and target, its rows
#     restored with triggers disabled (which tell the hint nothing): the first claim gets
#     the first row (the hint kept for the dropped table is forgotten), not one past the
#     old hint.
# Prints "N passed, N failed" last.
#   bash test/hints/run.sh      (PG_CONFIG exported; BATON_HINTS_PORT: first port, default 55160)
set -uo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"
DIR=$(mktemp -d /tmp/pg_baton-hints.XXXXXX)
HOLDER=""
trap '[[ -n $HOLDER ]] && kill "$HOLDER" 2>/dev/null; cluster_stop "$DIR" >/dev/null 2>&1' EXIT
port=$(cluster_free_port "${BATON_HINTS_PORT:-55160}")
cluster_start "$DIR" "$port" "shared_preload_libraries = 'pg_baton'" "baton.reaper_databases = ''" \
    "autovacuum = off" "max_prepared_transactions = 2" >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
PASS=0 FAIL=0
check() { # check NAME EXPECTED ACTUAL
    if [[ $2 == "$3" ]]; then PASS=$((PASS + 1)); echo "ok   $1"; else FAIL=$((FAIL + 1)); echo "FAIL $1: expected '$2', got '$3'"; fi
}
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
T=00000000-0000-0000-0000-00000000a117

reads() { q -c "SELECT idx_tup_read FROM pg_stat_user_indexes WHERE indexrelname = 'ready_pkey'"; }
# claim_read: one claim of target h and its finish: the dedup key it got and the index
# entries it read.
claim_read() {
    local before key
    before=$(reads)
    key=$(q -c "SELECT c.dedup_key || ' ' || baton.finish('$T', c.id, c.generation) FROM baton.claim('$T', 'h', '1 minute') c")
    echo "${key% *} $(($(reads) - before))"
}
# setup PREFIX: pg_baton, the tenant, 1,200 rows PREFIX1.. of target h, a transaction
# holding the horizon (HOLDER), 1,000 of the rows claimed and finished by batches.
setup() {
    q -c "CREATE EXTENSION pg_baton" -c "SELECT baton.create_tenant('$T')" \
        -c "SELECT count(*) FROM baton.enqueue_batch('$T', (SELECT jsonb_agg(jsonb_build_object('target', 'h', 'dedup_key', '$1' || g) ORDER BY g)
            FROM generate_series(1, 1200) g))" >/dev/null
    q -c "BEGIN" -c "SELECT txid_current()" -c "SELECT pg_sleep(60)" -c "COMMIT" >/dev/null 2>&1 &
    HOLDER=$!
    sleep 0.5
    for _ in $(seq 1 10); do
        q -c "SELECT count(*) FROM (SELECT baton.finish_batch('$T', array_agg(id), array_agg(generation))
                                    FROM baton.claim('$T', 'h', '1 minute', 100)) f" >/dev/null
    done
}
yes_if() { (("$1")) && echo t || echo f; }
prepare_write() { # prepare_write GID KEY: a transaction that enqueues KEY (priority 5) of target h, prepared
    # (without its wake-up: a transaction that sent a NOTIFY cannot PREPARE)
    q -c "SET baton.notify = off" -c "BEGIN" -c "SELECT baton.enqueue('$T', 'h', '$2', priority => 5)" -c "PREPARE TRANSACTION '$1'" >/dev/null
}

setup h
read -r key n < <(claim_read)
check "past 1,000 rows claimed: the next row, the dead entries passed ($n read)" "h1001 t" "$key $(yes_if "n < 100")"

prepare_write p1 urgent1
q -c "COMMIT PREPARED 'p1'" >/dev/null
sleep 1.1  # the hint looks for prepared transactions once a second at most
read -r key1 _ < <(claim_read)
read -r key2 n2 < <(claim_read)
read -r key3 n3 < <(claim_read)
check "a prepared write, committed: its row first, then a claim from the top ($n2 read), then the hint again ($n3)" \
    "urgent1 h1002 t h1003 t" "$key1 $key2 $(yes_if "n2 >= 1000") $key3 $(yes_if "n3 < 100")"

prepare_write p2 urgent2
sleep 1.1
read -r key4 n4 < <(claim_read)
sleep 1.1
read -r key5 n5 < <(claim_read)
check "a prepared write not committed: its row unseen, no hint (the claims read from the top: $n4, $n5)" \
    "h1004 h1005 t" "$key4 $key5 $(yes_if "n4 >= 1000 && n5 >= 1000")"
q -c "COMMIT PREPARED 'p2'" >/dev/null
sleep 1.1
read -r key6 _ < <(claim_read)
read -r key7 n7 < <(claim_read)
read -r key8 n8 < <(claim_read)
check "once committed: its row first, then a claim from the top ($n7 read), then the hint again ($n8)" \
    "urgent2 h1006 t h1007 t" "$key6 $key7 $(yes_if "n7 >= 1000") $key8 $(yes_if "n8 < 100")"

kill "$HOLDER" 2>/dev/null
wait "$HOLDER" 2>/dev/null
HOLDER=""
q -c "DROP EXTENSION pg_baton" >/dev/null
setup again
# The new rows written as a restore with triggers disabled writes them (pg_restore
# --disable-triggers; on Citus, a shard group copied back to a node by a move): no
# write tells the hint of them.
q -c "DROP EXTENSION pg_baton" -c "CREATE EXTENSION pg_baton" -c "SELECT baton.create_tenant('$T')" \
    -c "SET session_replication_role = replica" \
    -c "INSERT INTO baton.deliveries (tenant, id, target, dedup_key) SELECT '$T', g, 'h', 'new' || g FROM generate_series(1, 1200) g" \
    -c "INSERT INTO baton.ready (tenant, target, rank, id, run_after) SELECT '$T', 'h', 0, g, now() FROM generate_series(1, 1200) g" >/dev/null
read -r key _ < <(claim_read)
check "pg_baton dropped and created again, rows restored with triggers disabled: the first claim gets the first row, the old table's hint forgotten" \
    "new1" "$key"

echo "$PASS passed, $FAIL failed"
((FAIL == 0))
