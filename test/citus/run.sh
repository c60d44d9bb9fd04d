#!/usr/bin/env bash
# pg_baton on Citus: a throwaway three-node cluster (test/citus/cluster.sh: a coordinator
# and two workers on ports P..P+2, one socket directory) and the checks of
# docs/guide/scale-out.md and docs/internals/citus.md, each printed as "ok" or "FAIL"; the last line is "N passed, N failed".
# Without Citus installed ($(pg_config --pkglibdir)/citus.so absent) it prints one line
# saying so and exits 0, so that CI on a machine without Citus stays green.
#
#   bash test/citus/run.sh           (as root; PG_CONFIG names the server pg_baton is
#                                     installed into; BATON_CITUS_PORT the first port
#                                     tried, default 56640; BATON_KEEP_LOGS=1 keeps the
#                                     cluster's logs)
#
# What it checks:
#   - baton.distribute(): 55000 without Citus, off the coordinator, without workers; on
#     the coordinator the tenant tables distributed by tenant and colocated, workflows a
#     reference table, every tenant function distributed by its tenant argument;
#     idempotent; citus.enable_unsafe_triggers left as it was.
#   - the contract through the coordinator, called alone (delegated to the tenant's
#     node) and inside an explicit transaction (run on the coordinator, each statement
#     routed to the shard): deliveries, leases, DU001, DU009, retries, reap, purge,
#     workflows, markers, schedules (fire_schedules on the coordinator over both workers).
#   - pg_baton's functions inside a query on a distributed table: a read of the shard's
#     own tenant answers as on one node, and sees its transaction's uncommitted writes;
#     a call of another tenant and a write (finish per row, claim) refused with 0A000,
#     writing nothing; the PL/pgSQL loop the hint names finishes the rows, fenced or not.
#   - role-bound targets (DU005), alone and inside a transaction: the bound role may
#     claim, renew, finish, retry and finish a batch; another role is refused, the detail
#     naming the bound role; a target bound to a role dropped since refuses everyone.
#   - reap called on a worker reaps its own tenants only; on the coordinator, every node's.
#   - claim_fair through the coordinator, on a worker and inside a transaction: one round
#     over the tenants of both workers in order of their id, a paused tenant passed over;
#     key limits refused (0A000).
#   - the row rules of deliveries and the fence on the shards, by direct SQL too.
#   - ids unique across the cluster (deliveries and step entries of tenants on both
#     workers).
#   - fire_schedules called on a worker fires that node's tenants' due slots only; the
#     other worker's then fires the rest, and the coordinator's nothing more.
#   - baton.health on the coordinator and on each worker: its ten rows, expired leases
#     and pending deliveries on the workers seen from either; dead_rows on a worker sees
#     the dead rows of its own shards, the coordinator's and the other worker's do not;
#     the nodes' rows gathered through the coordinator (run_command_on_all_nodes).
#   - the views granted to roles (delivery_stats, run_stats, schedules, health): a role
#     granted them by grant_admin (or the exporter's grants) reads the owner's rows
#     through the coordinator, the same columns as on a worker, the rows of the scripts'
#     bodies; its direct SELECT on the tables is refused (42501); a second distribute()
#     keeps them.
#   - no statement reaches the planner crashes of Citus 13.2 and 14.0: retry and
#     resolve_marker on every path (crash_shapes.sql), a write touching a pg_baton table
#     with a rule (refused); every function of schema baton in every shape of
#     test/sweep/calls.sql (sweep.sh: alone, in FROM, subqueries, CTE, LATERAL, UNION,
#     prepared, PL/pgSQL; alone and in transactions; on the coordinator and on a worker)
#     answers or refuses; and no backend of any node died.
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/citus/cluster.sh
source "$ROOT/test/citus/cluster.sh"
citus_require citus

PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok   - $*"; }
not_ok() { FAIL=$((FAIL + 1)); echo "FAIL - $*"; }
check() { # check NAME EXPECTED ACTUAL
    if [[ $2 == "$3" ]]; then ok "$1"; else not_ok "$1 (expected '$2', got '$3')"; fi
}
# q [psql args]: quiet, unaligned, tuples only, against the coordinator unless -p says otherwise.
q() { psql -X -q -At "$@"; }
# code SQL...: the SQLSTATE of the first error the statements raise, or "ok".
code() {
    local out
    out=$(psql -X -q -At -v VERBOSITY=sqlstate "$@" 2>&1 >/dev/null | sed -n 's/^ERROR:  //p' | head -n 1)
    echo "${out:-ok}"
}

# Three consecutive free ports and a fourth for a Citus server without workers.
p0=$(citus_free_ports "${BATON_CITUS_PORT:-56640}" 4) || { echo "citus: no free port"; echo "0 passed, 1 failed"; exit 1; }
BASE=$(mktemp -d /tmp/pg_baton-citus.XXXXXX)
LONE=$(mktemp -d /tmp/pg_baton-citus-lone.XXXXXX)
rmdir "$LONE"
cleanup() {
    if [[ ${BATON_KEEP_LOGS:-0} == 1 ]]; then
        for i in 0 1 2; do cp "$BASE/n$i/log" "/tmp/pg_baton-citus-n$i.log" 2>/dev/null; done
    fi
    citus_cluster_stop "$BASE" >/dev/null 2>&1
    cluster_stop "$LONE" >/dev/null 2>&1
}
trap cleanup EXIT

if ! citus_cluster_start "$BASE" "$p0" 2>"$BASE.start.log"; then
    cat "$BASE.start.log"
    rm -f "$BASE.start.log"
    echo "citus: the cluster did not start"
    echo "0 passed, 1 failed"
    exit 1
fi
rm -f "$BASE.start.log"
C=$p0 W1=$((p0 + 1)) W2=$((p0 + 2))
SOCK=$BASE/sock
echo "citus: coordinator $SOCK:$C, workers :$W1 and :$W2"

# --- distribute(): refusals -------------------------------------------------------------
q -c "CREATE DATABASE nocitus" >/dev/null
q -d nocitus -c "CREATE EXTENSION pg_baton" >/dev/null
check "distribute() without Citus in the database: 55000" "55000" "$(code -d nocitus -c "SELECT baton.distribute()")"
check "... naming what is missing" "pg_baton cannot be distributed: extension \"citus\" is not installed in this database" \
    "$(q -d nocitus -c "SELECT baton.distribute()" 2>&1 | sed -n 's/^ERROR:  //p')"
check "... with a hint" "1" \
    "$(q -d nocitus -c "SELECT baton.distribute()" 2>&1 | grep -c "^HINT:  Install Citus on every node")"
q -p "$W1" -c "CREATE DATABASE onworker" >/dev/null
q -p "$W1" -d onworker -c "CREATE EXTENSION citus" -c "CREATE EXTENSION pg_baton" >/dev/null 2>&1
check "distribute() on a node that is not the coordinator: 55000" "55000" \
    "$(code -p "$W1" -d onworker -c "SELECT baton.distribute()")"
cluster_start "$LONE" $((p0 + 3)) "unix_socket_directories = '$SOCK'" "shared_preload_libraries = 'citus,pg_baton'" \
    "max_prepared_transactions = 10" "shared_buffers = 32MB" >/dev/null 2>&1
export PGHOST=$SOCK PGPORT=$C
q -p $((p0 + 3)) -c "CREATE EXTENSION citus" -c "CREATE EXTENSION pg_baton" >/dev/null
check "distribute() without a worker: 55000" "55000" "$(code -p $((p0 + 3)) -c "SELECT baton.distribute()")"
q -p $((p0 + 3)) -c "SELECT citus_set_coordinator_host('$SOCK', $((p0 + 3)))" >/dev/null
check "... saying so" "pg_baton cannot be distributed: no citus worker node is added" \
    "$(q -p $((p0 + 3)) -c "SELECT baton.distribute()" 2>&1 | sed -n 's/^ERROR:  //p')"
cluster_stop "$LONE" >/dev/null 2>&1
export PGHOST=$SOCK PGPORT=$C

# --- distribute() -----------------------------------------------------------------------
q -c "CREATE ROLE baton_citus_admin" >/dev/null
# In the transaction that created pg_baton, the workers' connections would wait for its
# locks, a wait Citus sees no deadlock in: refused instead of hanging.
check "distribute() in the transaction that created pg_baton: 55000, at once" "55000" \
    "$(timeout 120 psql -X -q -At -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -c "BEGIN" -c "CREATE EXTENSION pg_baton" \
        -c "SELECT baton.distribute()" 2>&1 >/dev/null | sed -n 's/^ERROR: *\([0-9A-Z]\{5\}\):.*/\1/p' | head -n 1)"
q -c "CREATE EXTENSION pg_baton" >/dev/null
q -c "SELECT baton.grant_admin('baton_citus_admin')" >/dev/null
check "an admin who is not the owner may not distribute: 42501" "42501" \
    "$(code -c "SET ROLE baton_citus_admin" -c "SELECT baton.distribute()")"
q -c "SELECT baton.distribute()" >"$BASE/distribute.out" 2>&1
check "distribute() on the coordinator: no error, one NOTICE saying what it handed to Citus over both workers" \
    "0 1 NOTICE:  pg_baton distributed: 10 tenant tables, 3 reference tables and 44 functions handed to Citus|over 2 worker nodes" \
    "$(grep -c '^ERROR' "$BASE/distribute.out") $(grep -c '^NOTICE' "$BASE/distribute.out") $(grep '^NOTICE' "$BASE/distribute.out")|$(grep -o 'over [0-9] worker nodes' "$BASE/distribute.out")"
check "distribute() again: it says nothing new was handed over" "NOTICE:  pg_baton was distributed already: no table or function handed to Citus" \
    "$(q -c "SELECT baton.distribute()" 2>&1 >/dev/null | grep '^NOTICE')"
check "no local copy of the wake-up secret is left on the coordinator" "0" \
    "$(q -c "SELECT pg_relation_size('baton.wakeup_key')")"
check "distribute() again: idempotent" "ok" "$(code -c "SELECT baton.distribute()")"
check "ten tenant tables hash-distributed by tenant, one colocation group" "10 1 10" \
    "$(q -c "SELECT count(*), count(DISTINCT colocationid), count(*) FILTER (WHERE column_to_column_name(logicalrelid, partkey) = 'tenant') FROM pg_dist_partition WHERE logicalrelid::text LIKE 'baton.%' AND partmethod = 'h'" | tr '|' ' ')"
check "workflows and wakeup_key are reference tables" "n n" \
    "$(q -c "SELECT partmethod FROM pg_dist_partition WHERE logicalrelid IN ('baton.workflows'::regclass, 'baton.wakeup_key'::regclass)" | paste -sd' ')"
check "every function taking the tenant first is distributed by it, colocated with the tables" "44 44" \
    "$(q -c "SELECT count(*), count(*) FILTER (WHERE o.colocationid = (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = 'baton.tenants'::regclass) AND o.distribution_argument_index = 0) FROM pg_dist_object o JOIN pg_proc p ON o.classid = 'pg_proc'::regclass AND o.objid = p.oid WHERE p.pronamespace = 'baton'::regnamespace" | tr '|' ' ')"
check "citus.enable_unsafe_triggers is left off after the call" "off" \
    "$(q -c "SELECT baton.distribute()" -c "SHOW citus.enable_unsafe_triggers" | tail -n 1)"
check "the shards' fence triggers carry the logical table" "deliveries" \
    "$(q -p "$W1" -c "SELECT DISTINCT encode(tgargs, 'escape') FROM pg_trigger WHERE tgrelid::regclass::text ~ '^baton\.deliveries_[0-9]+$' AND tgname LIKE 'fence\_%' AND tgname NOT LIKE 'fence\_truncate%'" | tr -d '\\000')"

# Tenants: T1..T20, spread over both workers; A and B on different workers.
q -c "SELECT baton.create_tenant(('00000000-0000-0000-0000-' || lpad(i::text, 12, '0'))::uuid) FROM generate_series(1, 20) i" >/dev/null 2>&1
for i in $(seq 1 20); do q -c "SELECT baton.create_tenant('00000000-0000-0000-0000-$(printf %012d "$i")')" >/dev/null; done
node_of() { q -c "SELECT nodeport FROM pg_dist_shard s JOIN pg_dist_shard_placement p USING (shardid) WHERE s.logicalrelid = 'baton.tenants'::regclass AND get_shard_id_for_distribution_column('baton.tenants', '$1'::uuid) = s.shardid"; }
A=00000000-0000-0000-0000-000000000001
B=""
for i in $(seq 2 20); do
    t=00000000-0000-0000-0000-$(printf %012d "$i")
    if [[ $(node_of "$t") != "$(node_of "$A")" ]]; then B=$t; break; fi
done
check "tenants live on both workers" "2" \
    "$(q -c "SELECT count(DISTINCT p.nodeport) FROM pg_dist_shard s JOIN pg_dist_shard_placement p USING (shardid) WHERE s.logicalrelid = 'baton.tenants'::regclass")"

# --- the contract through the coordinator ------------------------------------------------
check "a call alone is delegated to the tenant's node" "1" \
    "$(q -c "SET client_min_messages = debug1" -c "SELECT baton.enqueue('$A', 'probe', 'probe')" 2>&1 | grep -c 'pushing down the function call')"

# One wake-up secret for the cluster: a channel has one name, delegated, run on the
# coordinator inside a transaction, or asked of a worker directly.
check "a wake-up channel has the same name on every node" "1" \
    "$({ q -c "SELECT baton.wakeup_channel('$A', 'w')"
         q -c "BEGIN" -c "SELECT baton.wakeup_channel('$A', 'w')" -c "COMMIT"
         for port in $W1 $W2; do q -p "$port" -c "SELECT baton.wakeup_channel('$A', 'w')"; done; } | grep -E '^baton_' | sort -u | wc -l)"

check "a call with a NULL tenant is refused (22004), not delegated (Citus would crash hashing it)" "22004 22004" \
    "$(code -c "SELECT baton.create_tenant(NULL)") $(code -c "SELECT * FROM baton.claim(NULL, 'w', '1 hour')")"

# flow MODE TENANT: one pass over the contract; MODE "alone" runs each call as its own
# top-level statement (delegated), "txn" each inside BEGIN ... COMMIT (the coordinator
# runs it, each statement routed to the tenant's shard).
flow() {
    local mode=$1 t=$2 pre="" post="" id gen out
    if [[ $mode == txn ]]; then pre="BEGIN;"; post="COMMIT;"; fi
    s() { q -c "$pre $1; $post" 2>&1 | grep -v '^\(BEGIN\|COMMIT\)$'; }
    sc() { code -c "$pre $1; $post"; }
    check "[$mode] enqueue returns an id" "t" "$(s "SELECT baton.enqueue('$t', 'w', 'k1', '{\"a\": 1}') > 0")"
    id=$(s "SELECT id FROM baton.deliveries WHERE tenant = '$t' AND dedup_key = 'k1'")
    check "[$mode] enqueue again: the same id" "$id" "$(s "SELECT baton.enqueue('$t', 'w', 'k1', '{\"a\": 1}')")"
    check "[$mode] enqueue with another payload: DU009" "DU009" "$(sc "SELECT baton.enqueue('$t', 'w', 'k1', '{\"a\": 2}')")"
    check "[$mode] enqueue_batch" "2" "$(s "SELECT count(*) FROM baton.enqueue_batch('$t', '[{\"target\": \"w\", \"dedup_key\": \"k2\"}, {\"target\": \"w\", \"dedup_key\": \"k3\"}]')")"
    # Set-based on Citus too: a taken key returns its row, a key used twice in the batch
    # its first item's id, a new one is inserted; DU009 inserts nothing.
    check "[$mode] enqueue_batch: taken, new, repeated, new" "false true false true|$id|true" \
        "$(s "SELECT string_agg(r.inserted::text, ' ' ORDER BY r.ord) || '|' || min(r.id) FILTER (WHERE r.ord = 1) || '|' || (min(r.id) FILTER (WHERE r.ord = 2) = min(r.id) FILTER (WHERE r.ord = 3)) FROM baton.enqueue_batch('$t', '[{\"target\": \"w\", \"dedup_key\": \"k1\", \"payload\": {\"a\": 1}}, {\"target\": \"w\", \"dedup_key\": \"b1\"}, {\"target\": \"w\", \"dedup_key\": \"b1\"}, {\"target\": \"w\", \"dedup_key\": \"b2\"}]') WITH ORDINALITY AS r(id, inserted, ord)")"
    check "[$mode] enqueue_batch with a taken key's other payload: DU009, nothing inserted" "DU009 0" \
        "$(sc "SELECT count(*) FROM baton.enqueue_batch('$t', '[{\"target\": \"w\", \"dedup_key\": \"b3\"}, {\"target\": \"w\", \"dedup_key\": \"k1\", \"payload\": {\"a\": 2}}]')") $(s "SELECT count(*) FROM baton.deliveries WHERE tenant = '$t' AND dedup_key = 'b3'")"
    q -c "DELETE FROM baton.deliveries WHERE tenant = '$t' AND dedup_key IN ('b1', 'b2')" >/dev/null
    out=$(s "SELECT id || ' ' || generation FROM baton.claim('$t', 'w', '1 hour')")
    id=${out% *} gen=${out#* }
    check "[$mode] claim takes the oldest, generation 1" "1" "$gen"
    check "[$mode] renew" "t" "$(s "SELECT baton.renew('$t', $id, $gen, '1 hour') > now()")"
    check "[$mode] renew with a stale generation: DU001" "DU001" "$(sc "SELECT baton.renew('$t', $id, 0, '1 hour')")"
    check "[$mode] finish" "finished" "$(s "SELECT baton.finish('$t', $id, $gen)")"
    check "[$mode] finish again: terminal-once" "finished" "$(s "SELECT baton.finish('$t', $id, $gen)")"
    check "[$mode] finish by another generation: DU001" "DU001" "$(sc "SELECT baton.finish('$t', $id, 7)")"
    out=$(s "SELECT id || ' ' || generation FROM baton.claim('$t', 'w', '1 hour')")
    id=${out% *} gen=${out#* }
    check "[$mode] retry gives the attempt back" "pending" "$(s "SELECT baton.retry('$t', $id, $gen, 'boom', '0 seconds')")"
    check "[$mode] retry by the old holder: DU001" "DU001" "$(sc "SELECT baton.retry('$t', $id, $gen, 'boom')")"
    check "[$mode] claim two" "2" "$(s "SELECT count(*) FROM baton.claim('$t', 'w', '1 hour', 5)")"
    check "[$mode] finish_batch" "2" \
        "$(s "SELECT count(*) FROM baton.finish_batch('$t', ARRAY(SELECT id FROM baton.deliveries WHERE tenant = '$t' AND status = 'claimed' ORDER BY id), ARRAY(SELECT generation FROM baton.deliveries WHERE tenant = '$t' AND status = 'claimed' ORDER BY id))")"
    check "[$mode] delivery() reads the row" "finished" "$(s "SELECT status FROM baton.delivery('$t', $id)")"
    check "[$mode] a fenced tenant refuses enqueue: DU002" "DU002" \
        "$(q -c "SELECT baton.set_tenant_state('$t', 'quiescing')" >/dev/null; sc "SELECT baton.enqueue('$t', 'w', 'k9')")"
    check "[$mode] tenant_write_allowed says so" "f" "$(s "SELECT baton.tenant_write_allowed('$t')")"
    q -c "SELECT baton.set_tenant_state('$t', 'active')" >/dev/null
    check "[$mode] active again: enqueue" "ok" "$(sc "SELECT baton.enqueue('$t', 'w', 'k9')")"
    # Workflows and markers.
    local run sid
    run=$(s "SELECT baton.submit('$t', 'wf', '{\"n\": 1}', 'run-$mode')")
    check "[$mode] submit" "36" "${#run}"
    check "[$mode] approve with the digest" "ok" "$(sc "SELECT baton.approve('$t', '$run', 'alice', baton.inputs_digest('$t', '$run'))")"
    gen=$(s "SELECT baton.acquire_run('$t', '$run', 'o1', '1 hour')")
    check "[$mode] acquire_run" "1" "$gen"
    sid=$(s "SELECT stage_id FROM baton.transition_stage('$t', '$run', $gen)")
    check "[$mode] transition_stage starts the first stage" "t" "$([[ $sid =~ ^[0-9]+$ ]] && echo t || echo "$sid")"
    check "[$mode] start_stage" "ok" "$(sc "SELECT baton.start_stage('$t', '$run', $gen, $sid)")"
    check "[$mode] claim_marker" "ok" "$(sc "SELECT baton.claim_marker('$t', $sid, \"position\" => 0, kind => 'mail')")"
    check "[$mode] complete_stage" "ok" "$(sc "SELECT baton.complete_stage('$t', '$run', $gen, $sid, '{}')")"
    check "[$mode] transition_stage moves to the next stage" "b" \
        "$(s "SELECT stage FROM baton.transition_stage('$t', '$run', $gen, $sid)")"
    s "SELECT baton.release_run('$t', '$run', $gen)" >/dev/null
    gen=$(s "SELECT baton.acquire_run('$t', '$run', 'o2', '1 hour')")
    check "[$mode] a marker of the old generation is in doubt" "1" \
        "$(s "SELECT count(*) FROM baton.markers_in_doubt('$t', '$run')")"
    check "[$mode] resolve_marker" "ok" "$(sc "SELECT baton.resolve_marker('$t', $sid, 0, $gen, 'done')")"
    check "[$mode] enter_step" "1" "$(s "SELECT entry_seq FROM baton.enter_step('$t', 'user-$mode', 'purge', 'd1')")"
    check "[$mode] acquire_next_run finds nothing more" "0" \
        "$(s "SELECT count(*) FROM baton.acquire_next_run('$t', 'wf', 'o3', '1 minute')")"
}
q -c "SELECT baton.define_workflow('wf', '{\"start\": \"a\", \"requires_approval\": true, \"stages\": {\"a\": {\"next\": [\"b\"]}, \"b\": {\"next\": [\"@finish\"]}}}')" >/dev/null
flow alone "$A"
flow txn "$B"

# Producers racing on the same keys with enqueue_batch (delegated, and run on the
# coordinator inside transactions): a key taken since the look-up sends the batch item
# by item on Citus; every batch answers for each of its items, each key is stored once.
race_batch() {
    local w=$1 r b
    for r in 0 1 2 3 4 5; do
        b=$(for ((k = r * 20; k < r * 20 + 40; k++)); do printf '{"target": "race", "dedup_key": "r%d"}\n' "$k"; done | paste -sd, -)
        if ((w % 2)); then
            q -c "SELECT count(*) FROM baton.enqueue_batch('$A', '[$b]')" 2>&1
        else
            q -c "BEGIN" -c "SELECT count(*) FROM baton.enqueue_batch('$A', '[$b]')" -c "COMMIT" 2>&1 | grep -v '^\(BEGIN\|COMMIT\)$'
        fi
    done
}
for w in 1 2 3 4; do race_batch "$w" >"$BASE/race$w.out" & done
wait
check "racing enqueue_batch: every batch answered for its 40 items" "24" "$(cat "$BASE"/race*.out | grep -cx 40)"
grep -vhx 40 "$BASE"/race*.out | head -n 5 | sed 's/^/    /'  # what a batch answered instead
check "racing enqueue_batch: 140 keys stored once each" "140 140" \
    "$(q -c "SELECT count(*) || ' ' || count(DISTINCT dedup_key) FROM baton.deliveries WHERE tenant = '$A' AND target = 'race'")"
# The counters: each node counts the calls that ran there into its own
# baton.event_counts (written by flush_counts(), which a reaper would call: this cluster
# runs none). Delegated enqueues (each a top-level call, run on the tenant's worker),
# keys repeated among them: summed over the nodes, each key inserted once is counted once.
for port in $CITUS_PORTS; do q -p "$port" -c "SELECT baton.flush_counts()" >/dev/null; done
for k in 1 2 3 1 2 4; do q -c "SELECT baton.enqueue('$A', 'counted', 'c$k')" >/dev/null; done
q -c "SELECT count(*) FROM baton.enqueue_batch('$A', '[{\"target\": \"counted\", \"dedup_key\": \"c4\"}, {\"target\": \"counted\", \"dedup_key\": \"c5\"}]')" >/dev/null
counted=0
for port in $CITUS_PORTS; do
    n=$(q -p "$port" -c "SELECT baton.flush_counts()" -c "SELECT COALESCE(sum(enqueued), 0) FROM baton.delivery_counters WHERE tenant = '$A' AND target = 'counted'" | tail -n 1)
    counted=$((counted + n))
done
check "the counters, summed over the nodes: five keys enqueued by delegated calls, each counted once" "5" "$counted"

# --- pg_baton's functions inside a query on a distributed table ---------------------------
# Citus sends such a call into the shard query on the shards' nodes. A read of the tenant
# of the shard the query reads runs there (local execution, in the query's transaction);
# any other call is refused by pg_baton (0A000), before it runs a statement.
q -c "SELECT baton.enqueue('$A', 'nest', k) FROM unnest(ARRAY['n1', 'n2', 'n3']) k" >/dev/null
check "a read inside a query on its tenant's shard: tenant_write_allowed beside the row" "active|t" \
    "$(q -c "SELECT state, baton.tenant_write_allowed(tenant) FROM baton.tenants WHERE tenant = '$A'" 2>&1)"
check "... delivery() equal to the row it reads, for every row" "3 3" \
    "$(q -c "SELECT count(*), count(*) FILTER (WHERE baton.delivery(d.tenant, d.id)::text = d::text) FROM baton.deliveries d WHERE d.tenant = '$A' AND d.target = 'nest'" 2>&1 | tr '|' ' ')"
check "... over every tenant (a query on every shard), each call its own row's tenant" "20" \
    "$(q -c "SELECT count(*) FROM baton.tenants WHERE baton.tenant_write_allowed(tenant)" 2>&1)"
q -c "SELECT baton.set_tenant_state('$A', 'quiescing')" >/dev/null
check "... a fenced tenant read as fenced" "quiescing|f 19" \
    "$(q -c "SELECT state, baton.tenant_write_allowed(tenant) FROM baton.tenants WHERE tenant = '$A'" 2>&1) $(q -c "SELECT count(*) FROM baton.tenants WHERE baton.tenant_write_allowed(tenant)" 2>&1)"
q -c "SELECT baton.set_tenant_state('$A', 'active')" >/dev/null
check "inside a transaction: the call sees the transaction's own uncommitted writes (a row, a fence)" "n1 pending|n2 pending|n3 pending|n4 pending quiescing|f" \
    "$(q -c "BEGIN" -c "SELECT baton.enqueue('$A', 'nest', 'n4')" -c "SELECT baton.set_tenant_state('$A', 'quiescing')" \
         -c "SELECT string_agg(d.dedup_key || ' ' || (baton.delivery(d.tenant, d.id)).status, '|' ORDER BY d.dedup_key) FROM baton.deliveries d WHERE d.tenant = '$A' AND d.target = 'nest'" \
         -c "SELECT state, baton.tenant_write_allowed(tenant) FROM baton.tenants WHERE tenant = '$A'" -c "ROLLBACK" 2>&1 | grep -E '^(n1 |quiescing)' | paste -sd' ')"
check "... and nothing of it after the rollback" "active|t 3" \
    "$(q -c "SELECT state, baton.tenant_write_allowed(tenant) FROM baton.tenants WHERE tenant = '$A'" 2>&1) $(q -c "SELECT count(*) FROM baton.deliveries WHERE tenant = '$A' AND target = 'nest'")"
check "the setting that allows the call is the call's only: off in the next shard query" "off" \
    "$(q -c "SELECT baton.tenant_write_allowed(tenant), current_setting('citus.allow_nested_distributed_execution') FROM baton.tenants WHERE tenant = '$A'" -c "SELECT current_setting('citus.allow_nested_distributed_execution') FROM baton.tenants WHERE tenant = '$A'" 2>&1 | tail -n 1)"
check "a call of another tenant inside a shard query: 0A000 (not Citus' XX000), alone and in a transaction" "0A000 0A000" \
    "$(code -c "SELECT baton.tenant_write_allowed('$B') FROM baton.tenants WHERE tenant = '$A'") $(code -c "BEGIN" -c "SELECT baton.delivery('$B', 1) FROM baton.tenants WHERE tenant = '$A'" -c "COMMIT")"
check "... naming the function and what to do" "ERROR:  baton.tenant_write_allowed() cannot run inside a query on a shard of another tenant|HINT:  Call baton.tenant_write_allowed() alone or with constants, without a distributed table in the same query, or restrict the query to the call's tenant (WHERE tenant = ...)." \
    "$(q -c "SELECT baton.tenant_write_allowed('$B') FROM baton.tenants WHERE tenant = '$A'" 2>&1 | grep -E '^(ERROR|HINT)' | paste -sd'|')"
q -c "SELECT count(*) FROM baton.claim('$A', 'nest', '1 hour', 2)" >/dev/null
check "a write inside a shard query (finish per row): 0A000, alone and in a transaction" "0A000 0A000" \
    "$(code -c "SELECT count(*) FROM baton.deliveries d, LATERAL baton.finish(d.tenant, d.id, d.generation) WHERE d.tenant = '$A' AND d.target = 'nest' AND d.status = 'claimed'") $(code -c "BEGIN" -c "SELECT baton.enqueue('$A', 'nest', 'n5')" -c "SELECT count(*) FROM baton.deliveries d, LATERAL baton.finish(d.tenant, d.id, d.generation) WHERE d.tenant = '$A' AND d.target = 'nest' AND d.status = 'claimed'" -c "COMMIT")"
check "... naming the function and what to do" "ERROR:  baton.finish() cannot run inside a query on a distributed table|HINT:  Call baton.finish() alone or with constants, one call per statement (for example from a PL/pgSQL loop over the rows the query selects)." \
    "$(q -c "SELECT count(*) FROM baton.deliveries d, LATERAL baton.finish(d.tenant, d.id, d.generation) WHERE d.tenant = '$A' AND d.status = 'claimed'" 2>&1 | grep -E '^(ERROR|HINT)' | paste -sd'|')"
check "... and a claim, over every shard: 0A000" "0A000" \
    "$(code -c "SELECT count(*) FROM baton.tenants t, LATERAL baton.claim(t.tenant, 'nest', '1 hour')")"
check "... nothing written: two claimed, one pending, no n5" "claimed 2 pending 1" \
    "$(q -c "SELECT string_agg(status || ' ' || n, ' ' ORDER BY status) FROM (SELECT status, count(*) n FROM baton.deliveries WHERE tenant = '$A' AND target = 'nest' GROUP BY 1) s")"
# The way the hint names: one call per statement, from a PL/pgSQL loop on the coordinator.
finish_loop="DO \$\$ DECLARE r record; BEGIN FOR r IN SELECT tenant, id, generation FROM baton.deliveries WHERE target = 'nest' AND status = 'claimed' LOOP PERFORM baton.finish(r.tenant, r.id, r.generation); END LOOP; END \$\$"
q -c "SELECT baton.set_tenant_state('$A', 'quiescing')" >/dev/null
check "a PL/pgSQL loop calling finish per row: a fenced tenant refuses it (DU002), nothing finished" "DU002 0" \
    "$(code -c "$finish_loop") $(q -c "SELECT count(*) FROM baton.deliveries WHERE tenant = '$A' AND target = 'nest' AND status = 'finished'")"
q -c "SELECT baton.set_tenant_state('$A', 'active')" >/dev/null
check "... active: it finishes each row, inside a transaction too" "ok finished 2 pending 1" \
    "$(code -c "BEGIN" -c "$finish_loop" -c "COMMIT") $(q -c "SELECT string_agg(status || ' ' || n, ' ' ORDER BY status) FROM (SELECT status, count(*) n FROM baton.deliveries WHERE tenant = '$A' AND target = 'nest' GROUP BY 1) s")"

# --- role-bound targets (DU005), alone and inside a transaction --------------------------
# target_bindings.role holds the oid of the role on the shard's node; run on the
# coordinator (inside a transaction) a check must resolve the role by name there.
q -c 'CREATE ROLE "Bound Worker" LOGIN' -c "CREATE ROLE baton_other LOGIN" \
    -c "SELECT baton.grant_worker('\"Bound Worker\"')" -c "SELECT baton.grant_worker('baton_other')" >/dev/null
# as ROLE MODE SQL: the statement's output as ROLE, alone or inside BEGIN ... COMMIT;
# as_code ROLE MODE SQL: its SQLSTATE; as_detail ROLE MODE SQL: its error's detail.
as() {
    local pre="" post=""
    [[ $2 == txn ]] && pre="BEGIN;" post="COMMIT;"
    q -U "$1" -c "$pre $3; $post" 2>&1 | grep -v '^\(BEGIN\|COMMIT\)$'
}
as_code() {
    local pre="" post=""
    [[ $2 == txn ]] && pre="BEGIN;" post="COMMIT;"
    code -U "$1" -c "$pre $3; $post"
}
as_detail() { as "$1" "$2" "$3" | sed -n 's/^DETAIL:  //p'; }
for mode in txn alone; do
    tg=bound-$mode
    q -c "SELECT baton.bind_target('$B', '$tg', '\"Bound Worker\"')" \
        -c "SELECT baton.enqueue('$B', '$tg', k) FROM unnest(ARRAY['k1', 'k2', 'k3']) k" >/dev/null
    check "[$mode] another role may not claim a bound target: DU005" "DU005" \
        "$(as_code baton_other $mode "SELECT * FROM baton.claim('$B', '$tg', '1 hour')")"
    check "[$mode] ... the detail names the bound role" 'The target is bound to role "Bound Worker", and the caller is not a member of it.' \
        "$(as_detail baton_other $mode "SELECT * FROM baton.claim('$B', '$tg', '1 hour')")"
    out=$(as "Bound Worker" $mode "SELECT id || ' ' || generation FROM baton.claim('$B', '$tg', '1 hour')")
    id=${out% *} gen=${out#* }
    check "[$mode] the bound role claims its target" "1" "$gen"
    check "[$mode] ... renews" "t" "$(as "Bound Worker" $mode "SELECT baton.renew('$B', $id, $gen, '1 hour') > now()")"
    check "[$mode] another role may not renew: DU005" "DU005" \
        "$(as_code baton_other $mode "SELECT baton.renew('$B', $id, $gen, '1 hour')")"
    check "[$mode] ... nor finish, naming the bound role" 'The target is bound to role "Bound Worker", and the caller is not a member of it.' \
        "$(as_detail baton_other $mode "SELECT baton.finish('$B', $id, $gen)")"
    check "[$mode] ... nor finish_batch: DU005" "DU005" \
        "$(as_code baton_other $mode "SELECT * FROM baton.finish_batch('$B', ARRAY[$id], ARRAY[$gen])")"
    check "[$mode] ... nor retry: DU005" "DU005" "$(as_code baton_other $mode "SELECT baton.retry('$B', $id, $gen, 'x')")"
    check "[$mode] the bound role finishes" "finished" "$(as "Bound Worker" $mode "SELECT baton.finish('$B', $id, $gen)")"
    out=$(as "Bound Worker" $mode "SELECT id || ' ' || generation FROM baton.claim('$B', '$tg', '1 hour')")
    id=${out% *} gen=${out#* }
    check "[$mode] ... retries" "pending" "$(as "Bound Worker" $mode "SELECT baton.retry('$B', $id, $gen, 'x')")"
    out=$(as "Bound Worker" $mode "SELECT id || ' ' || generation FROM baton.claim('$B', '$tg', '1 hour')")
    id=${out% *} gen=${out#* }
    check "[$mode] ... and finishes a batch" "1" \
        "$(as "Bound Worker" $mode "SELECT count(*) FROM baton.finish_batch('$B', ARRAY[$id], ARRAY[$gen])")"
    # A bound role dropped since: no one but superusers may work on the target, as on one node.
    q -c "CREATE ROLE baton_gone" -c "SELECT baton.bind_target('$B', 'gone-$mode', 'baton_gone')" \
        -c "SELECT baton.enqueue('$B', 'gone-$mode', 'k')" -c "DROP ROLE baton_gone" >/dev/null
    check "[$mode] a target bound to a role dropped since: DU005" "DU005" \
        "$(as_code baton_other $mode "SELECT * FROM baton.claim('$B', 'gone-$mode', '1 hour')")"
done

# --- reap and purge from the coordinator, over rows on both workers ----------------------
for t in "$A" "$B"; do
    q -c "SELECT baton.enqueue('$t', 'rx', 'r1')" -c "SELECT baton.enqueue('$t', 'rx', 'r2', max_attempts => 1)" >/dev/null
    q -c "SELECT count(*) FROM baton.claim('$t', 'rx', '1 second', 2)" >/dev/null
done
# The claims' leases in baton.leases, each in the shard of its tenant (a query of one
# tenant goes to that tenant's shard group only).
leases_of_rx() {
    for t in "$A" "$B"; do
        q -c "SELECT count(*) FROM baton.leases l JOIN baton.deliveries d ON d.tenant = l.tenant AND d.id = l.id WHERE l.tenant = '$t' AND d.target = 'rx'"
    done | paste -sd' '
}
check "each claim's lease is in baton.leases, in the shard of its tenant, on each worker" "2 2" "$(leases_of_rx)"
sleep 1.2
check "reap on the coordinator reaps the expired leases of tenants on both workers" "4" "$(q -c "SELECT baton.reap()")"
check "... and deletes their rows of baton.leases" "0 0" "$(leases_of_rx)"
check "... each given back or failed by its attempts, as on one node" "failed 2 pending 2" \
    "$(q -c "SELECT string_agg(status || ' ' || n, ' ' ORDER BY status) FROM (SELECT status, count(*) n FROM baton.deliveries WHERE target = 'rx' GROUP BY status) s")"
check "purge on the coordinator removes the settled rows on both workers" "t 0" \
    "$(q -c "SELECT baton.purge('0 seconds') >= 2" -c "SELECT count(*) FROM baton.deliveries WHERE target = 'rx' AND status = 'failed'" | tr '\n' ' ' | sed 's/ $//')"

# --- reap called on a worker: that node's tenants only ----------------------------------
for t in "$A" "$B"; do
    q -c "SELECT baton.enqueue('$t', 'rl', 'r1')" -c "SELECT baton.enqueue('$t', 'rl', 'r2')" \
        -c "SELECT count(*) FROM baton.claim('$t', 'rl', '1 second', 2)" >/dev/null
done
sleep 1.2
check "reap called on A's worker reaps the expired leases of its tenants only" "2" "$(q -p "$(node_of "$A")" -c "SELECT baton.reap()")"
check "... leaving those of B, on the other worker" "$A pending 2 $B claimed 2" \
    "$(q -c "SELECT string_agg(tenant || ' ' || status || ' ' || n, ' ' ORDER BY tenant) FROM (SELECT tenant, status, count(*) n FROM baton.deliveries WHERE target = 'rl' GROUP BY 1, 2) s")"
check "... which the coordinator's reap reaches" "2" "$(q -c "SELECT baton.reap()")"

# --- the fair claim across the nodes -----------------------------------------------------
# Ten tenants on both workers bind target fx, three deliveries each. A session's round
# covers the tenants of every node in order of their id, one delivery a turn (weight 1);
# each call below is a new session, which starts at the first tenant with work.
TEN=$(q -c "SELECT string_agg('00000000-0000-0000-0000-' || lpad(i::text, 12, '0'), ' ') FROM generate_series(1, 10) i")
for t in $TEN; do
    q -c "SELECT baton.bind_target('$t', 'fx', current_user::regrole)" \
      -c "SELECT count(baton.enqueue('$t', 'fx', 'f' || g)) FROM generate_series(1, 3) g" >/dev/null
done
fair_turns() { # fair_turns [psql args] N: the tenants (last two digits) of one claim_fair of N, in the order returned
    local n=${*: -1}
    q "${@:1:$#-1}" -c "SELECT string_agg(right(c.tenant::text, 2), ' ') FROM baton.claim_fair('fx', '1 minute', $n) c"
}
check "the ten tenants of fx live on both workers" "2" "$(for t in $TEN; do node_of "$t"; done | sort -u | wc -l)"
check "claim_fair through the coordinator: a turn of each tenant, in order of their id, from both workers" \
    "01 02 03 04 05 06 07 08 09 10" "$(fair_turns 10)"
check "claim_fair on a worker: the same round, the other worker's tenants included" \
    "01 02 03 04 05 06 07 08 09 10" "$(fair_turns -p "$W1" 10)"
q -c "SELECT baton.pause('00000000-0000-0000-0000-000000000003', 'fx')" >/dev/null
check "claim_fair inside a transaction on the coordinator: a paused tenant passed over" \
    "01 02 04 05 06 07 08 09 10" "$(q -c "BEGIN" -c "SELECT string_agg(right(c.tenant::text, 2), ' ') FROM baton.claim_fair('fx', '1 minute', 10) c" -c "COMMIT")"
q -c "SELECT baton.resume('00000000-0000-0000-0000-000000000003', 'fx')" >/dev/null
check "... resumed, its last delivery is the only work left" "03" "$(fair_turns 10)"
check "every delivery of fx claimed once, each tenant's three at generation 1" "30 30 1" \
    "$(q -c "SELECT count(*), count(DISTINCT (tenant, id)), max(generation) FROM baton.deliveries WHERE target = 'fx' AND status = 'claimed'" | tr '|' ' ')"
check "key limits are refused on a distributed install (0A000), through the coordinator and on a worker, naming why" \
    "0A000 0A000 0A000 key limits are not available on a distributed install" \
    "$(code -c "SELECT baton.limit_key('$A', 'fx', 1)") $(code -c "SELECT baton.rate_limit_key('$A', 'fx', 1, '1 second')") $(code -p "$W1" -c "SELECT baton.unlimit_key('$A', 'fx')") $(q -c "SELECT baton.limit_key('$A', 'fx', 1)" 2>&1 | sed -n 's/^ERROR:  //p')"

# --- schedules from the coordinator -------------------------------------------------------
# schedule alone (delegated) and in a transaction; made due by moving next_fire_at back
# three hours (as after a pause); fire_schedules on the coordinator fires the latest
# slot of each, on both workers, once.
check "schedule alone and in a transaction, on a tenant of each worker" "ok ok" \
    "$(code -c "SELECT baton.schedule('$A', 'tick', 'ticks', '@every 1 hour')") $(code -c "BEGIN" -c "SELECT baton.schedule('$B', 'tick', 'ticks', '@every 1 hour')" -c "COMMIT")"
check "schedule_rows is distributed: each row on its tenant's worker" "t" \
    "$(q -c "SELECT count(*) = 2 FROM baton.schedules WHERE name = 'tick' AND next_fire_at = date_trunc('hour', now()) + interval '1 hour'")"
q -c "UPDATE baton.schedule_rows SET next_fire_at = now() - interval '3 hours' WHERE name = 'tick'" >/dev/null
check "a replace with the same spec keeps the due slot (the upsert on the shard)" "2" \
    "$(q -c "SELECT baton.schedule('$A', 'tick', 'ticks', '@every 1 hour', '{\"v\": 2}')" -c "BEGIN" \
         -c "SELECT baton.schedule('$B', 'tick', 'ticks', '@every 1 hour', '{\"v\": 2}')" -c "COMMIT" \
         -c "SELECT count(*) FROM baton.schedules WHERE name = 'tick' AND next_fire_at < now() - interval '2 hours'" | tail -n 1)"
check "fire_schedules on the coordinator fires the due schedules of tenants on both workers" "2" \
    "$(q -c "SELECT baton.fire_schedules()")"
check "... once: the next call fires nothing" "0" "$(q -c "SELECT baton.fire_schedules()")"
check "... the latest slot each, keyed by it, recorded by its schedule" "2" \
    "$(q -c "SELECT count(*) FROM baton.schedules s JOIN baton.deliveries d ON d.tenant = s.tenant AND d.id = s.last_delivery_id
             WHERE s.name = 'tick' AND s.last_fired_at = date_trunc('hour', now())
               AND d.dedup_key = 'schedule:tick:' || to_char(date_trunc('hour', now()) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')
               AND d.binding -> 'cause' ->> 'schedule' = to_char(date_trunc('hour', now()) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")"
check "unschedule alone and in a transaction" "t t" \
    "$(q -c "SELECT baton.unschedule('$A', 'tick')") $(q -c "BEGIN" -c "SELECT baton.unschedule('$B', 'tick')" -c "COMMIT" | grep -v '^\(BEGIN\|COMMIT\)$')"

# --- fire_schedules called on a worker: that node's tenants only --------------------------
# A worker has Citus' metadata: without reading its own shards only, its fire_schedules
# would fire the due schedules of the whole cluster.
q -c "SELECT baton.schedule('$A', 'tock', 'tocks', '@every 1 hour')" -c "SELECT baton.schedule('$B', 'tock', 'tocks', '@every 1 hour')" \
    -c "UPDATE baton.schedule_rows SET next_fire_at = now() - interval '3 hours' WHERE name = 'tock'" >/dev/null
# tocks TENANT: the deliveries fired to target tocks for TENANT.
tocks() { q -c "SELECT count(*) FROM baton.deliveries WHERE tenant = '$1' AND target = 'tocks'"; }
check "fire_schedules called on A's worker fires the due slots of its tenants only" "1" \
    "$(q -p "$(node_of "$A")" -c "SELECT baton.fire_schedules()")"
check "... A's slot, leaving B's, on the other worker, due" "1 0 1" \
    "$(tocks "$A") $(tocks "$B") $(q -c "SELECT count(*) FROM baton.schedules WHERE name = 'tock' AND next_fire_at < now()")"
check "... which fire_schedules called on B's worker fires" "1" "$(q -p "$(node_of "$B")" -c "SELECT baton.fire_schedules()")"
check "... so the coordinator's, over every node, finds nothing more due" "0" "$(q -c "SELECT baton.fire_schedules()")"
check "... each slot fired once, by its tenant's node (an id of that worker's range)" "1 1 t" \
    "$(tocks "$A") $(tocks "$B") $(q -c "SELECT bool_and(d.id >> 48 = p.groupid) FROM baton.deliveries d JOIN pg_dist_placement p ON p.shardid = get_shard_id_for_distribution_column('baton.deliveries', d.tenant) WHERE d.target = 'tocks'")"
q -c "SELECT baton.unschedule('$A', 'tock')" -c "SELECT baton.unschedule('$B', 'tock')" >/dev/null

# --- the row rules and the fence on the shards -------------------------------------------
check "a row with an unknown status is refused on its shard: 23514" "23514" \
    "$(code -c "INSERT INTO baton.deliveries (tenant, target, dedup_key, status) VALUES ('$A', 'w', 'bogus', 'bogus')")"
check "a row with max_attempts 0 is refused on its shard: 23514" "23514" \
    "$(code -c "INSERT INTO baton.deliveries (tenant, target, dedup_key, max_attempts) VALUES ('$A', 'w', 'zero', 0)")"
q -c "SELECT baton.set_tenant_state('$A', 'fenced')" >/dev/null
check "fenced from the coordinator: a direct INSERT on its node is refused (DU002)" "DU002" \
    "$(code -c "INSERT INTO baton.deliveries (tenant, target, dedup_key) VALUES ('$A', 'w', 'direct')")"
check "... and a direct UPDATE" "DU002" "$(code -c "UPDATE baton.deliveries SET priority = 5 WHERE tenant = '$A'")"
check "... and a delegated claim" "DU002" "$(code -c "SELECT * FROM baton.claim('$A', 'w', '1 hour')")"
check "... while the other tenant writes on" "ok" "$(code -c "SELECT baton.enqueue('$B', 'w', 'during-fence')")"
q -c "SELECT baton.set_tenant_state('$A', 'active')" >/dev/null

# --- ids unique across the cluster ------------------------------------------------------
for i in $(seq 1 20); do
    t=00000000-0000-0000-0000-$(printf %012d "$i")
    q -c "SELECT baton.enqueue('$t', 'ids', 'a')" -c "SELECT baton.enqueue('$t', 'ids', 'b')" \
        -c "SELECT * FROM baton.enter_step('$t', 'ids', 'x', 'd')" >/dev/null
    q -c "BEGIN" -c "SELECT baton.enqueue('$t', 'ids', 'c')" -c "SELECT * FROM baton.enter_step('$t', 'ids', 'y', 'd')" \
        -c "COMMIT" >/dev/null
done
check "delivery ids are unique across the cluster" "0" \
    "$(q -c "SELECT count(*) - count(DISTINCT id) FROM baton.deliveries")"
check "step entry ids are unique across the cluster" "0" \
    "$(q -c "SELECT count(*) - count(DISTINCT id) FROM (SELECT id FROM baton.step_entries UNION ALL SELECT id FROM baton.stages) e")"
check "delivery ids come from more than one node's range" "t" \
    "$(q -c "SELECT count(DISTINCT id >> 48) > 1 FROM baton.deliveries")"

# --- baton.health on the coordinator ------------------------------------------------------
# Its statements over pg_baton's tables are distributed queries from the coordinator (they
# see the workers' rows); xmin_horizon, dead_rows and reaper describe the coordinator.
check "baton.health answers on the coordinator of a distributed install, one row per check" \
    "xmin_horizon,dead_rows,reaper,expired_leases,stuck_runs,markers_in_doubt,schedules_behind,paused,waiting_on_limits,oldest_pending" \
    "$(q -c "SELECT string_agg(name, ',') FROM baton.health" 2>&1)"
q -c "SELECT baton.enqueue('$B', 'hx', 'h1')" -c "SELECT count(*) FROM baton.claim('$B', 'hx', '1 second')" >/dev/null
sleep 1.2
check "... expired_leases counts a lease that expired on a worker" "warn true" \
    "$(q -c "SET baton.health_expired_warn = 0" -c "SELECT status || ' ' || (value >= 1) FROM baton.health WHERE name = 'expired_leases'" 2>&1)"
check "... oldest_pending names a delivery on a worker" "warn true" \
    "$(q -c "SET baton.health_pending_warn = 0" -c "SELECT status || ' ' || (detail LIKE 'delivery % of tenant % to target %') FROM baton.health WHERE name = 'oldest_pending'" 2>&1)"
check "... and in an explicit transaction" "10" \
    "$(q -c "BEGIN" -c "SELECT count(*) FROM baton.health" -c "COMMIT" 2>&1)"
# On each worker: the checks over pg_baton's tables are distributed queries from there
# too (the whole cluster's rows); dead_rows reads that node's shards.
for port in $W1 $W2; do
    check "baton.health answers on worker :$port, one row per check" "10" "$(q -p "$port" -c "SELECT count(*) FROM baton.health" 2>&1)"
done
WA=$(node_of "$A") WB=$(node_of "$B")
check "... expired_leases on A's worker counts the lease that expired on B's" "warn true" \
    "$(q -p "$WA" -c "SET baton.health_expired_warn = 0" -c "SELECT status || ' ' || (detail LIKE '%of tenant $B%') FROM baton.health WHERE name = 'expired_leases'" 2>&1)"
check "... oldest_pending on B's worker names a delivery" "warn true" \
    "$(q -p "$WB" -c "SET baton.health_pending_warn = 0" -c "SELECT status || ' ' || (detail LIKE 'delivery % of tenant % to target %') FROM baton.health WHERE name = 'oldest_pending'" 2>&1)"
check "... stuck_runs, markers_in_doubt and schedules_behind on a worker" "ok ok ok" \
    "$(q -p "$WA" -c "SELECT string_agg(status, ' ' ORDER BY name) FROM baton.health WHERE name IN ('stuck_runs', 'markers_in_doubt', 'schedules_behind')" 2>&1)"
# Dead rows on A's shard of deliveries (settled rows, which no index of the checks reads),
# kept from autovacuum until the checks below have read them.
SHARD_A=$(q -c "SELECT shard_name('baton.deliveries', get_shard_id_for_distribution_column('baton.deliveries', '$A'))")
q -p "$WA" -c "ALTER TABLE $SHARD_A SET (autovacuum_enabled = off)" >/dev/null
q -c "INSERT INTO baton.deliveries (tenant, target, dedup_key, status, settled_at) SELECT '$A', 'dead', 'd' || i, 'finished', now() FROM generate_series(1, 1500) i" \
    -c "DELETE FROM baton.deliveries WHERE tenant = '$A' AND target = 'dead'" >/dev/null
# dead_rows PORT: its status and detail with the health_dead_rows_min 1000.
dead_rows() { q -p "$1" -c "SET baton.health_dead_rows_min = 1000" -c "SELECT status || ' ' || detail FROM baton.health WHERE name = 'dead_rows'" 2>&1; }
out=""
for _ in $(seq 1 25); do # the worker's statistics arrive when its backend ends
    out=$(dead_rows "$WA")
    [[ $out == warn* ]] && break
    sleep 0.2
done
check "dead_rows on A's worker sees the dead rows of A's shard of deliveries" "warn $SHARD_A t" \
    "$(sed -E 's/^(warn) table ([^:]*): ([0-9]+) dead rows.*/\1 \2 \3/' <<<"$out" | awk '{print $1, $2, ($3 >= 1000 ? "t" : "f")}')"
check "... dead_rows on B's worker does not" "ok" "$(dead_rows "$WB" | cut -d' ' -f1)"
check "... nor the coordinator's, which reads its own tables only (no shard of a worker)" "ok f" \
    "$(dead_rows "$C" | awk '{print $1, ($0 ~ /deliveries_/ ? "t" : "f")}')"
check "the nodes' rows gathered through the coordinator (docs/guide/scale-out.md, Health): A's worker's names the shard" "3 1" \
    "$(q -c "SELECT count(*), count(*) FILTER (WHERE result LIKE '%dead_rows warn: table $SHARD_A:%') FROM run_command_on_all_nodes(\$\$SELECT pg_catalog.string_agg(name || ' ' || status || ': ' || detail, '; ') FROM baton.health WHERE name IN ('xmin_horizon', 'dead_rows', 'reaper')\$\$)" | tr '|' ' ')"
q -p "$WA" -c "ALTER TABLE $SHARD_A RESET (autovacuum_enabled)" >/dev/null
q -c "SELECT baton.reap()" >/dev/null

# --- the views granted to roles, through the coordinator --------------------------------
# distribute() gave delivery_stats, run_stats and schedules bodies that read functions of
# their own, which run the one-node query as the extension's owner (health reads
# health_checks() already): a role granted them by grant_admin reads, through the
# coordinator, the rows the owner reads (one transaction: one now()), and still has no
# right on the tables. On the workers the views keep the scripts' bodies: each function's
# rows are those of that body, run on the coordinator in the same transaction.
q -c "CREATE ROLE views_admin LOGIN" -c "SELECT baton.grant_admin('views_admin')" \
  -c "SELECT baton.schedule('$A', 'views', 'vt', '*/5 * * * *')" >/dev/null
view_rows() { # view_rows VIEW: "rows|md5" as the owner, then as views_admin, in one transaction
    q -c "BEGIN" -c "SELECT count(*) || '|' || md5(string_agg(v::text, '|' ORDER BY v::text)) FROM baton.$1 v" \
      -c "SET LOCAL ROLE views_admin" \
      -c "SELECT count(*) || '|' || md5(string_agg(v::text, '|' ORDER BY v::text)) FROM baton.$1 v" -c "COMMIT" 2>&1 | paste -sd' '
}
for v in delivery_stats run_stats schedules; do
    rows=$(view_rows "$v")
    check "baton.$v: a role granted it by grant_admin reads the owner's rows through the coordinator" \
        "$(cut -d' ' -f1 <<<"$rows") $(cut -d' ' -f1 <<<"$rows")" "$rows"
    check "... which are not none" "t" "$(q -c "SELECT count(*) > 0 FROM baton.$v")"
    check "... in its own session too" "ok" "$(code -U views_admin -c "SELECT * FROM baton.$v")"
    check "... with the columns it has on a worker" \
        "$(q -p "$W1" -c "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'baton.$v'::regclass AND attnum > 0")" \
        "$(q -c "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'baton.$v'::regclass AND attnum > 0")"
    def=$(q -p "$W1" -c "SELECT rtrim(replace(pg_get_viewdef('baton.$v'), E'\n', ' '), ';')")
    check "... and the rows of the scripts' body (a worker's view), run on the coordinator" "0" \
        "$(q -c "SELECT count(*) FROM ((TABLE baton.$v EXCEPT ALL ($def)) UNION ALL (($def) EXCEPT ALL TABLE baton.$v)) x" 2>&1)"
done
check "baton.health: the same role reads the owner's checks through the coordinator" \
    "$(q -c "SELECT string_agg(name || ' ' || status, ',') FROM baton.health")" \
    "$(q -U views_admin -c "SELECT string_agg(name || ' ' || status, ',') FROM baton.health" 2>&1)"
check "the same role's direct SQL on the tables is refused (42501), through the coordinator and on a worker" \
    "42501 42501 42501 42501" \
    "$(code -U views_admin -c "SELECT * FROM baton.deliveries") $(code -U views_admin -c "SELECT * FROM baton.runs") $(code -U views_admin -c "SELECT * FROM baton.schedule_rows") $(code -U views_admin -p "$W1" -c "SELECT * FROM baton.deliveries")"
check "the views' queries distribute() kept (baton.<view>_query) are the owner's alone" "42501 42501 42501" \
    "$(for v in delivery_stats run_stats schedules; do code -U views_admin -c "SELECT * FROM baton.${v}_query"; done | paste -sd' ')"
before=$(view_rows schedules | cut -d' ' -f1)
check "a second distribute() keeps the views' bodies and their readers" "ok $before" \
    "$(code -c "SELECT baton.distribute()") $(view_rows schedules | cut -d' ' -f2)"
q -c "CREATE ROLE views_exporter LOGIN" -c "GRANT USAGE ON SCHEMA baton TO views_exporter" \
  -c "GRANT SELECT ON baton.delivery_stats, baton.run_stats, baton.health TO views_exporter" \
  -c "GRANT EXECUTE ON FUNCTION baton.health_checks() TO views_exporter" -c "SELECT baton.distribute()" >/dev/null
check "a role granted the exporter's views (docs/guide/operations.md), then distribute(), reads them; not schedules" \
    "ok ok ok 42501 42501" \
    "$(for s in "SELECT * FROM baton.delivery_stats" "SELECT * FROM baton.run_stats" "SELECT * FROM baton.health" "SELECT * FROM baton.schedules" "SELECT * FROM baton.schedules_rows()"; do code -U views_exporter -c "$s"; done | paste -sd' ')"

# --- the statement shapes that crash Citus 13.2 and 14.0 ---------------------------------
check "crash_shapes.sql: retry and resolve_marker on every path" "ok" \
    "$(q -v ON_ERROR_STOP=1 -v t="$A" -f "$ROOT/test/citus/crash_shapes.sql" >/dev/null 2>"$BASE/shapes.err" && echo ok || head -c 400 "$BASE/shapes.err")"
# A rule on a distributed table crashes the planner of Citus 13.2 and 14.0 at the next
# write (a pg_baton table or any other): pg_baton refuses a write that touches one of its
# tables with rules.
q -c "CREATE TABLE public.rule_log (id bigint)" \
  -c "CREATE RULE log_updates AS ON UPDATE TO baton.deliveries DO ALSO INSERT INTO public.rule_log VALUES (NEW.id)" >/dev/null
check "a write touching a pg_baton table with a rule is refused (0A000), not planned by Citus" "0A000 0A000" \
    "$(code -c "BEGIN" -c "SELECT * FROM baton.claim('$A', 'w', '1 hour')" -c "COMMIT") $(code -c "UPDATE baton.deliveries SET priority = priority WHERE tenant = '$A'")"
check "... saying which table and what to do" "ERROR:  table \"baton.deliveries\" has rules, which a distributed install does not support|HINT:  Drop the rules of baton.deliveries (DROP RULE ... ON baton.deliveries)." \
    "$(q -c "UPDATE baton.deliveries SET priority = priority WHERE tenant = '$A'" 2>&1 | grep -E '^(ERROR|HINT)' | paste -sd'|')"
q -c "DROP RULE log_updates ON baton.deliveries" -c "DROP TABLE public.rule_log" >/dev/null
check "without the rule the same write runs" "ok" "$(code -c "UPDATE baton.deliveries SET priority = priority WHERE tenant = '$A'")"

# --- every function in every shape, on the coordinator and on a worker (sweep.sh) --------
# shellcheck source=test/citus/sweep.sh
source "$ROOT/test/citus/sweep.sh"
mkdir -p "$BASE/sweep"
citus_sweep "$BASE/sweep" "$C" "$W1" "$W2"

for i in 0 1 2; do
    check "node $i: no backend died (server log)" "0" \
        "$(grep -c 'terminated by signal\|server process .* was terminated' "$BASE/n$i/log")"
done

echo "$PASS passed, $FAIL failed"
((FAIL == 0))
