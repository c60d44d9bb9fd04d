#!/usr/bin/env bash
# The client libraries' tenant routing on a three-node Citus cluster
# (test/citus/cluster.sh) with pg_baton created and distributed and tenants on both
# workers: pg_baton.citus.tenant_node (clients/python, from its source with Debian's
# python3 and psycopg) and tenantNode (clients/node, from a copy of its source with its
# dependencies installed by `npm ci` of its package-lock.json). Each check is printed as
# "ok" or "FAIL":
#
#   1. asked on each node, both name for every tenant the node whose database has the
#      table of its shard of baton.deliveries;
#   2. a call made connected to the node named runs there: with citus.log_remote_commands
#      it issues no command to another node (made on the other worker, the same call
#      does), and its row is in that node's local shard table;
#   3. after citus_move_shard_placement of a tenant's shard to the other worker, both
#      name the new node, asked on each node, and a call made there runs there;
#   4. both answer None / null in a database without the citus extension (pg_baton
#      created there), and in one with Citus and pg_baton not distributed; the Python
#      call inside a transaction leaves that transaction usable.
#
#   bash test/citus/clients.sh      (PG_CONFIG as for run.sh; BATON_CITUS_PORT the first
#                                    port tried, default 57040; needs python3-psycopg,
#                                    node and npm, and the npm registry for `npm ci`)
#
# Without Citus it prints one line saying so and exits 0. The
# last line is "N passed, N failed".
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/citus/cluster.sh
source "$ROOT/test/citus/cluster.sh"
citus_require citus-clients

citus_suite_start citus-clients "${BATON_CITUS_PORT:-57040}"
read -r COORD W1 W2 <<<"$CITUS_PORTS"
PORTS=("$COORD" "$W1" "$W2")
setup_failed() { echo "citus-clients: $1"; echo "$PASS passed, $((FAIL + 1)) failed"; exit 1; }

# The Node.js library from a copy of its source, its dependencies from its lock file.
NODE_DIR=$BASE/node
mkdir -p "$NODE_DIR"
cp -R "$ROOT/clients/node/package.json" "$ROOT/clients/node/package-lock.json" "$ROOT/clients/node/src" "$NODE_DIR/"
(cd "$NODE_DIR" && timeout 300 npm ci --no-audit --no-fund --loglevel=error) >"$BASE/npm.log" 2>&1 \
    || setup_failed "npm ci in a copy of clients/node failed (npm registry unreachable?): $(tail -n 3 "$BASE/npm.log")"

# py_ask DB PORT TENANT...: pg_baton.citus.tenant_node of each tenant, asked on node PORT
# in database DB, one line each: "host port" or "none".
cat >"$BASE/ask.py" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import psycopg
from pg_baton.citus import tenant_node
with psycopg.connect(host=sys.argv[2], port=int(sys.argv[3]), dbname=sys.argv[4], user="postgres") as conn:
    for t in sys.argv[5:]:
        node = tenant_node(conn, t)
        print("none" if node is None else "%s %d" % node)
PY
py_ask() { PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "$BASE/ask.py" "$ROOT/clients/python/src" "$PGHOST" "$2" "$1" "${@:3}"; }
# js_ask DB PORT TENANT...: the same with tenantNode.
cat >"$NODE_DIR/ask.mjs" <<'JS'
import pg from 'pg';
import { tenantNode } from './src/index.mjs';

const [host, port, database, ...tenants] = process.argv.slice(2);
const client = new pg.Client({ host, port: Number(port), database, user: 'postgres' });
await client.connect();
try {
  for (const t of tenants) {
    const node = await tenantNode(client, t);
    console.log(node === null ? 'none' : `${node.host} ${node.port}`);
  }
} finally {
  await client.end();
}
JS
js_ask() { node "$NODE_DIR/ask.mjs" "$PGHOST" "$2" "$1" "${@:3}"; }
# shard_of TENANT: the id of the tenant's shard of baton.deliveries.
shard_of() { q -c "SELECT pg_catalog.get_shard_id_for_distribution_column('baton.deliveries', '$1'::uuid)"; }
# where_is TENANT: "host port" of each node whose database has the table of the tenant's
# shard of baton.deliveries (citus_shards leaves out an extension's tables).
where_is() {
    local shard p
    shard=$(shard_of "$1")
    for p in "${PORTS[@]}"; do
        [[ $(q -p "$p" -c "SELECT pg_catalog.to_regclass('baton.deliveries_$shard') IS NOT NULL") == t ]] && echo "$PGHOST $p"
    done
}
# remote_commands HOST PORT TENANT KEY: one enqueue of TENANT alone, connected to that
# node, with citus.log_remote_commands: the count of commands it issued to other nodes.
remote_commands() {
    psql -X -q -At -v ON_ERROR_STOP=1 -h "$1" -p "$2" -c "SET citus.log_remote_commands = on" \
        -c "SET client_min_messages = log" -c "SELECT baton.enqueue('$3', 'local', '$4')" 2>&1 >/dev/null \
        | grep -c 'issuing'
}
# local_row HOST PORT TENANT KEY: the count of the tenant's rows of that key in the node's
# own shard table of baton.deliveries.
local_row() {
    psql -X -q -At -h "$1" -p "$2" -c "SELECT count(*) FROM baton.deliveries_$(shard_of "$3") WHERE tenant = '$3' AND dedup_key = '$4'" 2>&1
}
# asked_everywhere LABEL TENANT...: check 1 on each node: both libraries' answers equal
# where_is's.
asked_everywhere() {
    local label=$1 expected t p
    shift
    expected=$(for t in "$@"; do where_is "$t"; done)
    for p in "${PORTS[@]}"; do
        check "python: tenant_node asked on :$p names the node that has each tenant's shard ($label)" "$expected" "$(py_ask postgres "$p" "$@" 2>&1)"
        check "node: tenantNode asked on :$p names the node that has each tenant's shard ($label)" "$expected" "$(js_ask postgres "$p" "$@" 2>&1)"
    done
}

# --- pg_baton distributed, two tenants on each worker ----------------------------------
q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_baton" -c "SELECT baton.distribute()" >"$BASE/setup.log" 2>&1 \
    || setup_failed "setup failed: $(cat "$BASE/setup.log")"
SOCK=$PGHOST
declare -A ON=([$W1]=0 [$W2]=0)
TENANTS=()
for i in $(seq 1 40); do
    t=$(printf '00000000-0000-4000-8040-%012d' "$i")
    w=$(where_is "$t")
    w=${w##* }
    if [[ -n ${ON[$w]:-} ]] && ((ON[$w] < 2)); then
        ON[$w]=$((ON[$w] + 1))
        TENANTS+=("$t")
        q -v ON_ERROR_STOP=1 -c "SELECT baton.create_tenant('$t')" >/dev/null 2>&1 || setup_failed "create_tenant('$t') failed"
    fi
done
((${#TENANTS[@]} == 4)) || setup_failed "no two tenants on each worker among the candidates"
check "the tenants' shards are on both workers" "2" "$(for t in "${TENANTS[@]}"; do where_is "$t"; done | sort -u | wc -l)"

# --- 1. the node of each tenant, asked on each node ----------------------------------------
asked_everywhere "4 tenants" "${TENANTS[@]}"

# --- 2. a call made connected there runs there ----------------------------------------------
T=${TENANTS[0]}
node=$(py_ask postgres "$COORD" "$T")
host=${node% *} port=${node##* }
other=$W1
[[ $port == "$W1" ]] && other=$W2
check "a call connected to the node named issues no command to another node" "0" "$(remote_commands "$host" "$port" "$T" here-1)"
check "the same call connected to the other worker issues commands (delegated)" "yes" \
    "$( (($(remote_commands "$SOCK" "$other" "$T" there-1) > 0)) && echo yes || echo no)"
check "the call's row is in the named node's own shard table" "1" "$(local_row "$host" "$port" "$T" here-1)"

# --- 3. the answer follows a move of the tenant's shard group ------------------------------
q -v ON_ERROR_STOP=1 -c "SELECT pg_catalog.citus_move_shard_placement($(shard_of "$T"), '$SOCK', $port, '$SOCK', $other,
    shard_transfer_mode => 'block_writes')" -c "CALL pg_catalog.citus_cleanup_orphaned_resources()" >"$BASE/move.log" 2>&1 \
    || cat "$BASE/move.log"
check "citus_move_shard_placement moved the tenant's shard to the other worker (its source cleaned up)" "$SOCK $other" "$(where_is "$T")"
asked_everywhere "4 tenants after the move" "${TENANTS[@]}"
node=$(js_ask postgres "$W1" "$T")
host=${node% *} port=${node##* }
check "after the move, a call connected to the node named issues no command to another node" "0" \
    "$(remote_commands "$host" "$port" "$T" here-2)"
check "after the move, the call's row is in the named node's own shard table" "1" "$(local_row "$host" "$port" "$T" here-2)"

# --- 4. no Citus, or pg_baton not distributed -------------------------------------------------
if ! {
    q -v ON_ERROR_STOP=1 -c "CREATE DATABASE plain" -c "CREATE DATABASE undistributed" &&
        q -d plain -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_baton" -c "SELECT baton.create_tenant('$T')" &&
        q -d undistributed -v ON_ERROR_STOP=1 -c "CREATE EXTENSION citus" -c "CREATE EXTENSION pg_baton" \
            -c "SELECT baton.create_tenant('$T')"
} >"$BASE/db.log" 2>&1; then
    setup_failed "the databases without Citus and without distribution: $(cat "$BASE/db.log")"
fi
check "a database without Citus has no pg_dist_node" "" "$(q -d plain -c "SELECT pg_catalog.to_regclass('pg_catalog.pg_dist_node')")"
check "python: tenant_node without Citus is None" "none" "$(py_ask plain "$COORD" "$T" 2>&1)"
check "node: tenantNode without Citus is null" "none" "$(js_ask plain "$COORD" "$T" 2>&1)"
check "python: tenant_node with Citus, pg_baton not distributed, is None" "none" "$(py_ask undistributed "$COORD" "$T" 2>&1)"
check "node: tenantNode with Citus, pg_baton not distributed, is null" "none" "$(js_ask undistributed "$COORD" "$T" 2>&1)"
check "python: tenant_node without Citus inside a transaction leaves it usable" "None 2" "$(
    PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 - "$ROOT/clients/python/src" "$SOCK" "$COORD" "$T" 2>&1 <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import psycopg
from pg_baton.citus import tenant_node
with psycopg.connect(host=sys.argv[2], port=int(sys.argv[3]), dbname="plain", user="postgres") as conn:
    conn.execute("SELECT 1")
    node = tenant_node(conn, sys.argv[4])
    print(node, conn.execute("SELECT 2").fetchone()[0])
PY
)"

echo "$PASS passed, $FAIL failed"
((FAIL == 0))
