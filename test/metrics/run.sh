#!/usr/bin/env bash
# pg_baton's metrics as Prometheus sees them:   bash test/metrics/run.sh
#
# Against the server in PGHOST/PGPORT (run-all.sh's cluster, pg_baton installed), in a
# database of its own: Debian's prometheus-sql-exporter runs contrib/sql_exporter/
# pg_baton.yml as a role with only the grants its header names, and Debian's prometheus
# scrapes it with contrib/prometheus/scrape.yml and loads contrib/prometheus/
# pg_baton.rules.yml. Checks:
#   - every query of the exporter succeeds as that role, and each metric the docs name
#     is in Prometheus under its name and labels;
#   - pg_baton_delivery_events_total counts what the deliveries did (enqueued, claimed,
#     finished, failed, cancelled, retried, redriven), keeps its value through a purge
#     (while the gauge pg_baton_deliveries_finished drops to 0), and grows after it;
#     increase() over it sees the new finishes;
#   - pg_baton_health has a sample per check of baton.health;
#   - every query of the Grafana dashboard (contrib/grafana/pg_baton.json) runs in
#     Prometheus without an error, and those over the counters return data;
#   - promtool: the scrape config and the rules are valid, the rules' unit tests pass
#     (contrib/prometheus/pg_baton.rules.test.yml).
# Prints "N passed, N failed" last.
set -uo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
DB=baton_metrics_$$
WORK=$(mktemp -d /tmp/pg_baton-metrics.XXXXXX)
chmod 755 "$WORK"
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
not_ok() { fail=$((fail + 1)); echo "FAIL $1"; }
check() { if [[ $2 == "$3" ]]; then ok "$1"; else not_ok "$1: expected '$2', got '$3'"; fi; }
q() { psql -X -q -At -d "$DB" -v ON_ERROR_STOP=1 "$@"; }
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1
    psql -X -q -d postgres -c "DROP ROLE IF EXISTS baton_metrics_exporter" >/dev/null 2>&1
    rm -rf -- "$WORK"
}
trap cleanup EXIT

for tool in prometheus promtool prometheus-sql-exporter curl; do
    command -v "$tool" >/dev/null || { not_ok "$tool is installed (scripts/install-deps.sh installs it)"; echo "$pass passed, $fail failed"; exit 1; }
done
# A free TCP port from $1 up.
free_port() {
    local p=$1
    while (echo >/dev/tcp/127.0.0.1/"$p") 2>/dev/null; do p=$((p + 1)); done
    echo "$p"
}

# --- the database, the exporter's role, some work ----------------------------------------
T=00000000-0000-0000-0000-0000000e7e70
psql -X -q -d postgres -c "CREATE DATABASE $DB" -c "DROP ROLE IF EXISTS baton_metrics_exporter" \
    -c "CREATE ROLE baton_metrics_exporter LOGIN" >/dev/null
q -c "CREATE EXTENSION pg_baton" \
  -c "GRANT USAGE ON SCHEMA baton TO baton_metrics_exporter" \
  -c "GRANT SELECT ON baton.delivery_stats, baton.delivery_counters, baton.run_stats, baton.limited_keys, baton.health TO baton_metrics_exporter" \
  -c "GRANT EXECUTE ON FUNCTION baton.health_checks() TO baton_metrics_exporter" \
  -c "SELECT baton.create_tenant('$T')" \
  -c "SELECT baton.bind_target('$T', 'mail', 'baton_metrics_exporter')" \
  -c "SELECT baton.enqueue('$T', 'mail', 'm' || g) FROM generate_series(1, 10) g" >/dev/null
# 6 finished, 2 failed, 1 retried, 1 cancelled then redriven; what is left pending.
q -c "SELECT baton.finish('$T', id, generation) FROM baton.claim('$T', 'mail', '1 hour', 6)" \
  -c "SELECT baton.finish('$T', id, generation, 'failed') FROM baton.claim('$T', 'mail', '1 hour', 2)" \
  -c "SELECT baton.retry('$T', id, generation, 'later', '1 hour') FROM baton.claim('$T', 'mail', '1 hour', 1)" \
  -c "SELECT baton.cancel_delivery('$T', id) FROM baton.claim('$T', 'mail', '1 hour', 1)" \
  -c "SELECT baton.redrive('$T', 'mail', ARRAY(SELECT id FROM baton.deliveries WHERE status = 'cancelled'))" \
  -c "SELECT baton.flush_counts()" >/dev/null
# A key limited to one with three deliveries: one admitted, two waiting.
q -c "SELECT baton.limit_key('$T', 'mail', 1, 'acme')" \
  -c "SELECT baton.enqueue_keyed('$T', 'mail', 'k' || g, 'acme') FROM generate_series(1, 3) g" \
  -c "SELECT baton.flush_counts()" >/dev/null
check "the counters hold the work" "13 10 6 2 1 1 1" \
    "$(q -c "SELECT concat_ws(' ', enqueued, claimed, finished, failed, retried, cancelled, redriven) FROM baton.delivery_counters WHERE tenant = '$T'")"

# --- the exporter ------------------------------------------------------------------------
XPORT=$(free_port 19237)
PPORT=$(free_port 19090)
HOSTDIR=${PGHOST:-/var/run/postgresql}
/usr/bin/python3 - "$ROOT/contrib/sql_exporter/pg_baton.yml" "$WORK/exporter.yml" \
    "postgres://baton_metrics_exporter@/$DB?host=$HOSTDIR&port=${PGPORT:-5432}&sslmode=disable" <<'PY'
import sys, yaml
config = yaml.safe_load(open(sys.argv[1]))
for job in config["jobs"]:
    job["connections"] = [sys.argv[3]]
    job["interval"] = "1s"
yaml.safe_dump(config, open(sys.argv[2], "w"), sort_keys=False)
PY
prometheus-sql-exporter -config.file "$WORK/exporter.yml" -web.listen-address "127.0.0.1:$XPORT" >"$WORK/exporter.log" 2>&1 &
pids+=($!)

# --- Prometheus ----------------------------------------------------------------------------
/usr/bin/python3 - "$ROOT/contrib/prometheus/scrape.yml" "$WORK/prometheus.yml" "127.0.0.1:$XPORT" \
    "$ROOT/contrib/prometheus/pg_baton.rules.yml" <<'PY'
import sys, yaml
scrape = yaml.safe_load(open(sys.argv[1]))
for job in scrape["scrape_configs"]:
    job["scrape_interval"] = "1s"
    job["static_configs"] = [{"targets": [sys.argv[3]]}]
config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
          "rule_files": [sys.argv[4]], "scrape_configs": scrape["scrape_configs"]}
yaml.safe_dump(config, open(sys.argv[2], "w"), sort_keys=False)
PY
if promtool check config "$WORK/prometheus.yml" >"$WORK/check.log" 2>&1; then
    ok "promtool check config: contrib/prometheus/scrape.yml with the rules"
else
    not_ok "promtool check config: $(cat "$WORK/check.log")"
fi
prometheus --config.file "$WORK/prometheus.yml" --storage.tsdb.path "$WORK/tsdb" \
    --web.listen-address "127.0.0.1:$PPORT" >"$WORK/prometheus.log" 2>&1 &
pids+=($!)
API="http://127.0.0.1:$PPORT/api/v1"
# value EXPR: the value of an instant query's single sample ("" when none, "error" on an error).
value() {
    curl -s --get "$API/query" --data-urlencode "query=$1" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
try:
    r = json.load(sys.stdin)
except ValueError:
    print(""); sys.exit()  # not up yet
if r.get("status") != "success": print("error"); sys.exit()
res = r["data"]["result"]
print(res[0]["value"][1] if len(res) == 1 else ("" if not res else "many:%d" % len(res)))'
}
# until EXPR WANT [SECONDS]: polls value(EXPR) until it is WANT.
until_value() {
    local i got=""
    for ((i = 0; i < ${3:-30} * 2; i++)); do
        got=$(value "$1")
        [[ $got == "$2" ]] && break
        sleep 0.5
    done
    echo "$got"
}

E='pg_baton_delivery_events_total{tenant="'$T'",target="mail"'
check "Prometheus scrapes the counter: finished" "6" "$(until_value "$E,event=\"finished\"}" 6 60)"
got=""
for ev in enqueued claimed failed retried cancelled redriven reaped; do got+="$(value "$E,event=\"$ev\"}") "; done
check "... and every other event" "13 10 2 1 1 1 0 " "$got"
check "the exporter's queries all succeed as a role with only the documented grants (no failed scrape, no error logged)" "0 0" \
    "$(curl -s "http://127.0.0.1:$XPORT/metrics" | awk '/^sql_exporter_last_scrape_failed/ { s += $2 } END { print s + 0 }') $(grep -c '"level":"error"' "$WORK/exporter.log")"
for m in pg_baton_deliveries_pending pg_baton_deliveries_claimed pg_baton_deliveries_oldest_pending_age_seconds \
    pg_baton_deliveries_expired_leases pg_baton_limited_keys_waiting pg_baton_limited_keys_longest_wait_seconds; do
    got=$(value "$m{tenant=\"$T\",target=\"mail\"}")
    if [[ $got =~ ^[0-9.e+-]+$ ]]; then ok "metric $m{tenant,target} ($got)"; else not_ok "metric $m{tenant,target}: '$got'"; fi
done
check "pg_baton_limited_keys_waiting: the two deliveries the key's limit holds back" "2" \
    "$(value "pg_baton_limited_keys_waiting{tenant=\"$T\",target=\"mail\"}")"
check "pg_baton_deliveries_pending counts the pending deliveries" "$(q -c "SELECT count(*) FROM baton.deliveries WHERE status = 'pending'")" \
    "$(value "pg_baton_deliveries_pending{tenant=\"$T\",target=\"mail\"}")"
check "pg_baton_health: one sample per check of baton.health, and their values" "$(q -c "SELECT count(*) FROM baton.health") $(q -c "SELECT count(*) FROM baton.health")" \
    "$(value 'count(pg_baton_health)') $(value 'count(pg_baton_health_value)')"
check "no label of the exporter's own is left" "" "$(value 'count({__name__=~"pg_baton.*", col!=""})')"

# A purge removes the finished deliveries: the gauge drops, the counter stays.
q -c "SELECT baton.purge('0 seconds')" >/dev/null
check "after a purge the gauge of finished deliveries drops to 0" "0" \
    "$(until_value "pg_baton_deliveries_finished{tenant=\"$T\",target=\"mail\"}" 0 30)"
check "... and the counter of finished deliveries keeps its 6" "6" "$(value "$E,event=\"finished\"}")"
q -c "SELECT baton.finish('$T', id, generation) FROM baton.claim('$T', 'mail', '1 hour', 2)" -c "SELECT baton.flush_counts()" >/dev/null
check "two more finishes: the counter goes on from 6" "8" "$(until_value "$E,event=\"finished\"}" 8 30)"
got=$(value "increase($E,event=\"finished\"}[1m])")
if awk -v v="$got" 'BEGIN { exit !(v > 0) }'; then ok "increase() over the counter sees the finishes ($got)"; else not_ok "increase() over the counter: '$got'"; fi

# --- the dashboard's queries -------------------------------------------------------------
n=0 bad=""
while IFS=$'\t' read -r title expr; do
    n=$((n + 1))
    expr=${expr//\$__rate_interval/1m}
    expr=${expr//\$tenant/.*}
    expr=${expr//\$target/.*}
    r=$(curl -s --get "$API/query" --data-urlencode "query=$expr" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
print("error: " + r.get("error", "") if r.get("status") != "success" else len(r["data"]["result"]))')
    if [[ $r == error* ]]; then bad+="$title ($r); "; fi
    if [[ $expr == *pg_baton_delivery_events_total* && $expr != *failed* && $r == 0 ]]; then bad+="$title (no data); "; fi
done < <(/usr/bin/python3 -c '
import json, sys
for p in json.load(open(sys.argv[1]))["panels"]:
    for t in p["targets"]:
        print(p["title"], t["expr"], sep="\t")' "$ROOT/contrib/grafana/pg_baton.json")
if [[ -z $bad && $n -ge 10 ]]; then ok "every query of the Grafana dashboard runs in Prometheus ($n)"; else not_ok "the dashboard's queries ($n): $bad"; fi

# --- the rules ---------------------------------------------------------------------------
if promtool check rules "$ROOT/contrib/prometheus/pg_baton.rules.yml" >"$WORK/rules.log" 2>&1; then
    ok "promtool check rules: $(grep -o '[0-9]* rules found' "$WORK/rules.log")"
else
    not_ok "promtool check rules: $(cat "$WORK/rules.log")"
fi
if (cd "$ROOT/contrib/prometheus" && promtool test rules pg_baton.rules.test.yml) >"$WORK/test.log" 2>&1; then
    ok "promtool test rules: the alerts' unit tests pass"
else
    not_ok "promtool test rules: $(cat "$WORK/test.log")"
fi
check "Prometheus loaded the rules" "7" \
    "$(curl -s "$API/rules" | /usr/bin/python3 -c 'import json, sys; print(sum(len(g["rules"]) for g in json.load(sys.stdin)["data"]["groups"]))')"

echo "$pass passed, $fail failed"
((fail == 0))
