#!/usr/bin/env bash
# What each hot path costs per item, pg_baton against plain SQL.    bash bench/costs.sh
#
# Needs pg_baton installed (make install), pgbench, pg_waldump, pg_test_fsync and
# valgrind (callgrind). Builds and installs nothing. For each hot path, the pg_baton
# calls and the plain SQL statements a strong user would write for the same work (one
# pgbench client, -M prepared, one transaction per script run unless it says otherwise):
#
#   enqueue        one item a transaction: baton.enqueue with a new dedup key, against an
#                  INSERT ... ON CONFLICT DO NOTHING into a queue table with a unique key
#   enqueue_batch  1,000 items a call: baton.enqueue_batch, against one INSERT ... SELECT
#                  FROM jsonb_to_recordset(...) ON CONFLICT DO NOTHING (the floor)
#   cycle          claim one, commit; finish it, commit (bench/sql/baton_cycle.sql,
#                  plain_cycle.sql)
#   batch 50       claim 50, commit; finish the 50 in one statement, commit
#                  (baton_batch.sql, plain_batch.sql)
#   batch500       the same with 500 a batch
#   enqueue_batch10k  enqueue_batch of 10,000 items a call, against the same INSERT
#   stage step     transition_stage + start_stage + complete_stage in one transaction,
#                  against the same protocol client-side (baton_wf_step.sql,
#                  plain_wf_step.sql)
#
# it measures
#
#   instructions per item: the postmaster runs under valgrind --tool=callgrind (a backend
#       is a fork, so each writes its own profile); a run of W warm-up transactions and a
#       run of W + N, each on fresh tables in a new backend: (second - first) / items.
#   WAL bytes per item: an ordinary cluster (full_page_writes = off, so that the figure is
#       the records the design writes; full-page images come on top after each
#       checkpoint, page by page, for both alike): pg_current_wal_insert_lsn around N
#       transactions after the warm-up, and pg_waldump --stats of that range by resource
#       manager (heap, btree, transaction: the rows, the index entries, the commits).
#
# and, for the distance to the physical limit, pg_test_fsync's fdatasync rate on the
# cluster's disk (one synchronous commit waits for one such flush; group commit shares
# it between concurrent commits).
#
# Options: --calls N (measured transactions per path, default 400; batched paths and
# enqueue_batch scale it down), --only PATH[,PATH] (enqueue, enqueue_batch,
# enqueue_batch10k, cycle, batch, batch500, step; default all but batch500 and
# enqueue_batch10k), --no-callgrind, --no-wal,
# --keep DIR (keep the profile of each path's longer run as DIR/PATH.SYSTEM.callgrind, for callgrind_annotate; callgrind
# then also records instructions by line, --dump-instr=yes), --baton-only (no plain SQL
# runs: its figures do not depend on pg_baton's build), --systems LIST (of baton, plain,
# wide, split, hybrid; default baton,plain): the layouts of deliveries written by plain
# SQL, what each costs the storage engine apart from pg_baton's code, on the paths
# cycle, batch, batch500, enqueue_batch and enqueue_batch10k: wide is pg_baton's layout
# (bench/sql/wide_*.sql), split the lease state apart (split_*.sql), hybrid pg_baton's
# table updated HOT beside a table of ready rows and one of leases (hybrid_*.sql);
# ceiling, on the cycle path only, is two single-row UPDATEs by key, each its own
# transaction (ceiling_cycle.sql): what bench/run.sh's ceiling/2 stands for.
# --fillfactor N: baton.deliveries' fillfactor before the load (bench/sql/baton_setup.sql);
# 100 fills its pages, so that a claim's and a finish's updates are not heap-only and
# write index entries; the share of heap-only updates of each run is printed.
# Environment: BATON_BENCH_PORT (first port to try, default 55560).
set -euo pipefail
export LC_ALL=C

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
SQL="$ROOT/bench/sql"
# shellcheck source-path=SCRIPTDIR/.. source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"

die() {
    echo "costs.sh: $*" >&2
    exit 2
}

CALLS=400
ROWS=0
ONLY="enqueue,enqueue_batch,cycle,batch,step"
CALLGRIND=1
WAL=1
KEEP=
FILLFACTOR=
SYSTEMS="baton plain"
while (($# > 0)); do
    case $1 in
        --calls) CALLS=${2:?--calls N}; shift ;;
        --only) ONLY=${2:?--only PATHS}; shift ;;
        --no-callgrind) CALLGRIND=0 ;;
        --no-wal) WAL=0 ;;
        --keep) KEEP=${2:?--keep DIR}; shift ;;
        --fillfactor) FILLFACTOR=${2:?--fillfactor N}; shift ;;
        --baton-only) SYSTEMS=baton ;;
        --systems) SYSTEMS=${2:?--systems LIST}; SYSTEMS=${SYSTEMS//,/ }; shift ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *) die "unknown option '$1'" ;;
    esac
    shift
done
for s in $SYSTEMS; do
    [[ $s =~ ^(baton|plain|wide|split|hybrid|ceiling)$ ]] || die "unknown system '$s' (--systems takes baton, plain, wide, split, hybrid, ceiling)"
done
BINDIR=$(_cluster_bindir) || die "no PostgreSQL server binaries"
if ((CALLGRIND)) && ! command -v valgrind >/dev/null; then die "valgrind is needed (or --no-callgrind)"; fi
TENANT=b0000000-0000-4000-8000-00000000c057
# warm-up transactions: caches, kept plans, generic plans after 5 executions (the
# calls of 10,000 items: 6, enough for the generic plan, and each costs as much as a
# few hundred of the others)
warmup() { case $1 in enqueue_batch10k) echo 6 ;; *) echo 30 ;; esac; }

CLUSTER=$(mktemp -d /tmp/pg_baton-bench-costs.XXXXXX)
WORK=$(mktemp -d /tmp/pg_baton-bench-costsw.XXXXXX)
chmod 0777 "$WORK"
# shellcheck disable=SC2317
cleanup() {
    local rc=$?
    trap - EXIT
    set +e
    cluster_stop "$CLUSTER" 2>/dev/null
    rm -rf -- "$WORK"
    exit "$rc"
}
trap cleanup EXIT
PORT=$(cluster_free_port "${BATON_BENCH_PORT:-55560}") || die "no free port"
# pg_baton preloaded, as bench/run.sh and production run it: its claims start at their
# claim hints (without the library, from the top of their target).
cluster_start "$CLUSTER" "$PORT" "shared_buffers = 256MB" "full_page_writes = off" "autovacuum = off" \
    "shared_preload_libraries = 'pg_baton'" \
    "max_wal_size = 4GB" "checkpoint_timeout = 1h" 2>/dev/null || die "could not start a cluster"
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }
q -c "CREATE DATABASE costs"
as_owner() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }

cat >"$WORK/baton_enqueue1.sql" <<'EOF'
SELECT baton.enqueue(:tenant, 'bench', 'k' || pg_catalog.nextval('public.costs_keys'));
EOF
cat >"$WORK/plain_enqueue1.sql" <<'EOF'
INSERT INTO q (dedup_key) VALUES ('k' || pg_catalog.nextval('public.costs_keys')) ON CONFLICT (dedup_key) DO NOTHING;
EOF
# :items (1,000 or 10,000) a call, the JSON built by the client (a literal here, new
# keys each call).
cat >"$WORK/baton_enqueue_batch.sql" <<'EOF'
SELECT count(*) FROM baton.enqueue_batch(:tenant,
    (SELECT jsonb_agg(jsonb_build_object('target', 'bench', 'dedup_key', 'k' || pg_catalog.nextval('public.costs_keys')))
       FROM generate_series(1, :items)));
EOF
cat >"$WORK/plain_enqueue_batch.sql" <<'EOF'
INSERT INTO q (dedup_key, payload)
SELECT r.dedup_key, coalesce(r.payload, '{}')
  FROM jsonb_to_recordset((SELECT jsonb_agg(jsonb_build_object('target', 'bench', 'dedup_key', 'k' || pg_catalog.nextval('public.costs_keys')))
                             FROM generate_series(1, :items))) AS r(target text, dedup_key text, payload jsonb)
ON CONFLICT (dedup_key) DO NOTHING;
EOF
# The layouts (--systems wide,split,hybrid): the items inserted as they come, no key looked up.
cat >"$WORK/wide_enqueue_batch.sql" <<'EOF'
INSERT INTO w (tenant, target, dedup_key, payload)
SELECT :tenant, r.target, r.dedup_key, coalesce(r.payload, '{}')
  FROM jsonb_to_recordset((SELECT jsonb_agg(jsonb_build_object('target', 'bench', 'dedup_key', 'k' || pg_catalog.nextval('public.costs_keys')))
                             FROM generate_series(1, :items))) AS r(target text, dedup_key text, payload jsonb);
EOF
cat >"$WORK/split_enqueue_batch.sql" <<'EOF'
WITH i AS (INSERT INTO s_items (tenant, target, dedup_key, payload)
           SELECT :tenant, r.target, r.dedup_key, coalesce(r.payload, '{}')
             FROM jsonb_to_recordset((SELECT jsonb_agg(jsonb_build_object('target', 'bench', 'dedup_key', 'k' || pg_catalog.nextval('public.costs_keys')))
                                        FROM generate_series(1, :items))) AS r(target text, dedup_key text, payload jsonb)
           RETURNING tenant, id, target, priority),
     s AS (INSERT INTO s_state (tenant, id) SELECT tenant, id FROM i)
INSERT INTO s_ready (tenant, target, priority, id, run_after) SELECT tenant, target, priority, id, now() FROM i;
EOF
cat >"$WORK/hybrid_enqueue_batch.sql" <<'EOF'
WITH i AS (INSERT INTO h (tenant, target, dedup_key, payload)
           SELECT :tenant, r.target, r.dedup_key, coalesce(r.payload, '{}')
             FROM jsonb_to_recordset((SELECT jsonb_agg(jsonb_build_object('target', 'bench', 'dedup_key', 'k' || pg_catalog.nextval('public.costs_keys')))
                                        FROM generate_series(1, :items))) AS r(target text, dedup_key text, payload jsonb)
           RETURNING tenant, id, target, priority, run_after)
INSERT INTO h_ready (tenant, target, priority, id, run_after) SELECT tenant, target, priority, id, run_after FROM i;
EOF

# supports PATH SYSTEM: whether the system has the path (the layouts only the delivery paths).
supports() {
    case $2:$1 in
        wide:enqueue | wide:step | split:enqueue | split:step | hybrid:enqueue | hybrid:step) return 1 ;;
        ceiling:cycle) return 0 ;;
        ceiling:*) return 1 ;;
        *) return 0 ;;
    esac
}

# path PATH SYSTEM -> "script items_per_txn txns" and sets up fresh tables for W + txns.
setup() { # PATH SYSTEM TXNS
    local rows
    case $1 in
        enqueue | enqueue_batch | enqueue_batch10k)
            if [[ $2 == baton ]]; then
                q -d costs -v tenant="$TENANT" -v rows=0 -f "$SQL/baton_setup.sql" >/dev/null 2>&1
                q -d costs -c "ALTER DATABASE costs SET baton.notify = off" >/dev/null
            elif [[ $2 != plain ]]; then
                q -d costs -v tenant="$TENANT" -v rows=0 -f "$SQL/$2_setup.sql" >/dev/null 2>&1
            else
                # The queue of plain_setup.sql, empty, with a unique dedup key.
                q -d costs -v rows=0 -f "$SQL/plain_setup.sql" \
                    -c "ALTER TABLE q ADD COLUMN dedup_key text NOT NULL UNIQUE" >/dev/null 2>&1
            fi
            ;;
        cycle | batch | batch500)
            # At least a backlog of 100,000: on a few thousand rows the planner runs plain
            # SQL's batched claim (id IN (subquery)) as a hash join over the whole table.
            rows=$((($(warmup "$1") + $3) * $(items "$1") + 100))
            ((rows >= 100000)) || rows=100000
            ROWS=$rows # the ceiling's keys
            if [[ $2 == ceiling ]]; then
                q -d costs -v rows="$rows" -f "$SQL/ceiling_setup.sql" >/dev/null 2>&1
            elif [[ $2 != plain ]]; then
                q -d costs -v tenant="$TENANT" -v rows="$rows" ${FILLFACTOR:+-v fillfactor="$FILLFACTOR"} \
                    -f "$SQL/$2_setup.sql" >/dev/null 2>&1
            else
                q -d costs -v rows="$rows" -f "$SQL/plain_setup.sql" >/dev/null 2>&1
            fi
            ;;
        step)
            if [[ $2 == baton ]]; then
                q -d costs -v tenant="$TENANT" -v clients=1 -f "$SQL/baton_wf_setup.sql" >/dev/null 2>&1
            else
                q -d costs -v clients=1 -f "$SQL/plain_wf_setup.sql" >/dev/null 2>&1
            fi
            ;;
    esac
    # New dedup keys in order (random ones split the key index's pages at random, a
    # few kB of WAL each time).
    q -d costs -c "SET client_min_messages = warning" -c "DROP SEQUENCE IF EXISTS public.costs_keys" -c "CREATE SEQUENCE public.costs_keys" -c CHECKPOINT >/dev/null
}
items() {
    case $1 in
        enqueue_batch) echo 1000 ;; enqueue_batch10k) echo 10000 ;; batch) echo 50 ;; batch500) echo 500 ;; *) echo 1 ;;
    esac
}
txns() {
    case $1 in
        enqueue_batch) echo $((CALLS / 40 + 1)) ;; enqueue_batch10k) echo $((CALLS / 200 + 1)) ;;
        batch) echo $((CALLS / 10 + 1)) ;; batch500) echo $((CALLS / 40 + 1)) ;; *) echo "$CALLS" ;;
    esac
}
script() { # PATH SYSTEM
    case $1 in
        enqueue) echo "$WORK/$2_enqueue1.sql" ;;
        enqueue_batch | enqueue_batch10k) echo "$WORK/$2_enqueue_batch.sql" ;;
        cycle) echo "$SQL/$2_cycle.sql" ;;
        batch | batch500) echo "$SQL/$2_batch.sql" ;;
        step) echo "$SQL/$2_wf_step.sql" ;;
    esac
}
label() {
    case $1 in
        enqueue) echo "enqueue (1 a transaction)" ;;
        enqueue_batch) echo "enqueue_batch (1,000 a call)" ;;
        enqueue_batch10k) echo "enqueue_batch (10,000 a call)" ;;
        cycle) echo "claim + finish (1 a transaction each)" ;;
        batch) echo "claim 50 + finish 50" ;;
        batch500) echo "claim 500 + finish 500" ;;
        step) echo "stage step (1 transaction)" ;;
    esac
}
# pgbench_run PATH SYSTEM TXNS: one client, one backend.
pgbench_run() {
    "$BINDIR/pgbench" -n -M prepared -c 1 -t "$3" -D tenant="$TENANT" -D batch="$(items "$1")" -D items="$(items "$1")" -D loaded=0 -D reap=1 -D rows="$ROWS" \
        -f "$(script "$1" "$2")" costs >"$WORK/pgbench.log" 2>&1 || { tail -5 "$WORK/pgbench.log" >&2; die "pgbench failed ($1, $2)"; }
    grep -q "number of failed transactions: 0\|^number of transactions actually processed: $3/" "$WORK/pgbench.log" \
        || { tail -5 "$WORK/pgbench.log" >&2; die "pgbench: not every transaction ran ($1, $2)"; }
}
# The items the tables hold as done by the run: a check that the script did its work.
done_items() { # PATH SYSTEM
    case $1:$2 in
        enqueue*:baton) q -d costs -c "SELECT count(*) FROM baton.deliveries" ;;
        enqueue*:plain) q -d costs -c "SELECT count(*) FROM q" ;;
        cycle:baton | batch*:baton) q -d costs -c "SELECT count(*) FROM baton.deliveries WHERE status = 'finished'" ;;
        cycle:plain | batch*:plain) q -d costs -c "SELECT count(*) FROM q WHERE status = 'finished'" ;;
        enqueue*:wide) q -d costs -c "SELECT count(*) FROM w" ;;
        enqueue*:split) q -d costs -c "SELECT count(*) FROM s_items" ;;
        cycle:wide | batch*:wide) q -d costs -c "SELECT count(*) FROM w WHERE status = 'finished'" ;;
        cycle:split | batch*:split) q -d costs -c "SELECT count(*) FROM s_state WHERE status = 'finished'" ;;
        enqueue*:hybrid) q -d costs -c "SELECT count(*) FROM h" ;;
        cycle:hybrid | batch*:hybrid) q -d costs -c "SELECT count(*) FROM h WHERE status = 'finished'" ;;
        cycle:ceiling) q -d costs -c "SELECT sum(n)::bigint / 2 FROM bench_ceiling" ;;
        step:baton) q -d costs -c "SELECT count(*) FROM baton.stages s JOIN bench_wf_clients c ON c.run = s.run_id" ;;
        step:plain) q -d costs -c "SELECT count(*) FROM wf_stages s JOIN wf_clients c ON c.run = s.run_id" ;;
    esac
}

IFS=, read -r -a PATHS <<<"$ONLY"
declare -A WALB INSTR DETAIL HOT
# updates HOT-UPDATES: baton.deliveries' counts of updates and of heap-only ones so far
# (a backend's counts reach the statistics when it exits, as pgbench's does).
updates() { q -d costs -c "SELECT n_tup_upd || ' ' || n_tup_hot_upd FROM pg_catalog.pg_stat_user_tables WHERE relid OPERATOR(pg_catalog.=) 'baton.deliveries'::pg_catalog.regclass"; }

# --- WAL bytes per item ------------------------------------------------------------------
if ((WAL)); then
    for p in "${PATHS[@]}"; do
        for s in $SYSTEMS; do
            supports "$p" "$s" || continue
            n=$(txns "$p")
            setup "$p" "$s" "$n"
            pgbench_run "$p" "$s" "$(warmup "$p")"
            before_items=$(done_items "$p" "$s")
            [[ $s == baton ]] && read -r upd0 hot0 < <(updates)
            start=$(q -d costs -c "SELECT pg_catalog.pg_current_wal_insert_lsn()")
            pgbench_run "$p" "$s" "$n"
            end=$(q -d costs -c "SELECT pg_catalog.pg_current_wal_insert_lsn()")
            if [[ $s == baton ]]; then
                read -r upd1 hot1 < <(updates)
                ((upd1 > upd0)) && HOT[$p.$s]="$((hot1 - hot0)) of $((upd1 - upd0)) updates of baton.deliveries heap-only"
            fi
            made=$(($(done_items "$p" "$s") - before_items))
            expect=$((n * $(items "$p")))
            # A stage step makes one stage row (the successor) per transaction.
            [[ $made -ge $expect ]] || die "$p/$s: $made items done, $expect expected"
            WALB[$p.$s]=$(q -d costs -c "SELECT round(pg_catalog.pg_wal_lsn_diff('$end', '$start') / $expect)")
            # Bytes per item by resource manager (the WAL of the range, all of it this run's).
            DETAIL[$p.$s]=$(as_owner "$BINDIR/pg_waldump" -p "$CLUSTER/data/pg_wal" -s "$start" -e "$end" --stats 2>/dev/null \
                | awk -v n="$expect" '{ gsub(/\([^)]*\)/, "") }
                      $1 ~ /^(Heap|Heap2|Btree|Transaction|XLOG|Standby)$/ && $2 > 0 {
                      printf "%s%s %.0f", (k++ ? ", " : ""), $1, $5 / n }')
        done
    done
    fsync_rate=$(as_owner "$BINDIR/pg_test_fsync" -s 2 -f "$CLUSTER/data/fsync_probe" 2>/dev/null \
        | awk '/fdatasync/ && /ops\/sec/ { for (i = 2; i <= NF; i++) if ($i == "ops/sec") { print $(i - 1); exit } }')
    rm -f "$CLUSTER/data/fsync_probe"
fi

# --- instructions per item ----------------------------------------------------------------
if ((CALLGRIND)); then
    data=$CLUSTER/data
    (cd "$CLUSTER" && as_owner "$BINDIR/pg_ctl" -D "$data" -m fast -w stop >/dev/null)
    (cd "$CLUSTER" && as_owner valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.pid.%p" ${KEEP:+--dump-instr=yes} \
        "$BINDIR/postgres" -D "$data" -c autovacuum=off -c fsync=off >"$CLUSTER/valgrind.log" 2>&1 &)
    for _ in $(seq 300); do
        q -c "SELECT 1" >/dev/null 2>&1 && break
        sleep 1
    done
    q -c "SELECT 1" >/dev/null || die "the postmaster under callgrind did not start"
    # profiles: the backends' profiles written so far, each once complete.
    profiles() {
        local c
        for c in "$WORK"/callgrind.pid.*; do
            [[ -e $c ]] && grep -q '^summary:\|^totals:' "$c" && echo "$c"
        done
        return 0
    }
    settled() { # wait until no backend of the setup is still writing its profile
        local a b
        for _ in $(seq 120); do
            a=$(ls -l "$WORK"); sleep 0.5; b=$(ls -l "$WORK")
            # The running processes' files are empty until they exit.
            [[ $a == "$b" && $(profiles | wc -l) -eq $(find "$WORK" -name 'callgrind.pid.*' -size +0 | wc -l) ]] && return 0
        done
        die "the setup's backends did not end"
    }
    # backend_instructions PATH SYSTEM TXNS [KEEP_AS]: fresh tables, one pgbench client; the total
    # of its backend (pgbench's first connection, which only looks at the server, is the
    # other, smaller, new profile).
    backend_instructions() {
        setup "$1" "$2" "$3"
        settled
        rm -f "$WORK"/callgrind.pid.*
        pgbench_run "$1" "$2" "$3"
        settled
        [[ -n $(profiles) ]] || die "no profile of pgbench's backend ($1, $2)"
        local top
        top=$(profiles | xargs grep -H '^summary:' | sort -t' ' -k2 -n | tail -n 1 | cut -d: -f1)
        sed -n 's/^summary: \([0-9]*\).*/\1/p' "$top"
        if [[ -n ${4:-} ]]; then cp "$top" "$4"; fi
        rm -f "$WORK"/callgrind.pid.*
    }
    for p in "${PATHS[@]}"; do
        for s in $SYSTEMS; do
            supports "$p" "$s" || continue
            n=$(txns "$p")
            W=$(warmup "$p")
            a=$(backend_instructions "$p" "$s" "$W")
            b=$(backend_instructions "$p" "$s" $((W + n)) ${KEEP:+"$KEEP/$p.$s.callgrind"})
            INSTR[$p.$s]=$(((b - a) / (n * $(items "$p"))))
        done
    done
fi

# --- the table ----------------------------------------------------------------------------
echo "== costs per item against plain SQL (one client; $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg))"
# ratio A B: A / B to two places, or - when either is unknown.
ratio() { if [[ -n $1 && -n $2 ]]; then awk "BEGIN { printf \"%.2f\", $1 / $2 }"; else echo -; fi; }
printf '%-40s %-8s %14s %8s %11s %8s\n' path system instructions "x plain" "WAL bytes" "x plain"
for p in "${PATHS[@]}"; do
    for s in $SYSTEMS; do
        supports "$p" "$s" || continue
        i=${INSTR[$p.$s]:-} w=${WALB[$p.$s]:-}
        printf '%-40s %-8s %14s %8s %11s %8s\n' "$(label "$p")" "$s" "${i:--}" "$(ratio "$i" "${INSTR[$p.plain]:-}")" \
            "${w:--}" "$(ratio "$w" "${WALB[$p.plain]:-}")"
    done
done
if ((WAL)); then
    echo
    echo "-- WAL bytes per item by resource manager (pg_waldump --stats: records and their full-page images)"
    for p in "${PATHS[@]}"; do
        for s in $SYSTEMS; do
            supports "$p" "$s" && printf '%-40s %-8s %s%s\n' "$(label "$p")" "$s:" "${DETAIL[$p.$s]:--}" \
                "${HOT[$p.$s]:+; ${HOT[$p.$s]}}"
        done
    done
    echo
    echo "-- the disk: pg_test_fsync, fdatasync (wal_sync_method's default here): ${fsync_rate:-?} flushes/s"
fi
