# shellcheck shell=bash
# The sweep: every function of schema baton called in every shape of
# test/sweep/calls.sql, each statement answering or refusing with a SQLSTATE, never
# killing its backend. Source this file, then:
#
#   sweep_prepare [psql connection args...]
#       once per database, as a superuser, before the passes: the role baton_sweep
#       (grant_*, bind_target) and the workflow sweep (passes running at once would race
#       to define it).
#   sweep_pass NAME TENANT MODE [psql connection args...]
#       one pass in one psql session: setup.sql with TENANT (a uuid no pass used before),
#       then calls.sql's script (MODE plain, or txn: each statement inside BEGIN ...
#       COMMIT of its own). Checks, counted with check() of the caller: setup ran, and
#       every statement of the script printed its line (a killed backend ends psql at
#       its statement). Prints the SQLSTATEs counted, and the first statement missing.
#   sweep_logs LOG...
#       checks that no server log names a backend terminated by a signal.
#
# The caller defines check NAME EXPECTED ACTUAL (test/citus/cluster.sh's, or its own)
# and SWEEP_DIR, a directory for the scripts and outputs.

SWEEP_SQL=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

sweep_prepare() {
    psql -X -q -At -v ON_ERROR_STOP=1 "$@" \
        -c "DO \$\$ BEGIN CREATE ROLE baton_sweep; EXCEPTION WHEN duplicate_object THEN NULL; END \$\$" \
        -c "SELECT baton.define_workflow('sweep', '{\"start\": \"a\", \"stages\": {\"a\": {\"next\": [\"@finish\"]}}}')" >/dev/null
}

sweep_pass() {
    local name=$1 tenant=$2 mode=$3 script out total answered
    shift 3
    script=$SWEEP_DIR/$name.sql
    out=$SWEEP_DIR/$name.out
    if ! psql -X -q -At -v ON_ERROR_STOP=1 -v t="$tenant" -v wf=sweep -v mode="$mode" "$@" \
        -c "\\i $SWEEP_SQL/setup.sql" -c "\\o $script" -c "\\i $SWEEP_SQL/calls.sql" >/dev/null 2>"$out.err"; then
        check "$name: setup and the calls' script" "ok" "$(head -c 300 "$out.err")"
        return
    fi
    total=$(grep -c '^\\echo sweep ' "$script")
    # The pass itself, in a session of its own (the script holds its values): query
    # results discarded, errors (SQLSTATEs only) kept.
    psql -X -q -At -v ON_ERROR_STOP=0 -v VERBOSITY=sqlstate "$@" \
        -c "\\o /dev/null" -c "\\i $script" -c "\\echo sweep done" >"$out" 2>"$out.err"
    answered=$(grep -c '^sweep [a-z_]* [a-z]* [0-9A-Z]\{5\}$' "$out")
    check "$name: every one of the $total statements answered or refused with a SQLSTATE" "$total 1" \
        "$answered $(grep -c '^sweep done$' "$out")"
    if ((answered < total)); then
        echo "     the first statement without an answer: $(grep '^\\echo sweep ' "$script" | sed -n "$((answered + 1))p")"
        grep -v '^psql:.*ERROR:  [0-9A-Z]\{5\}$' "$out.err" | head -n 5 | sed 's/^/     /'
    fi
    echo "     $name: $(sed -n 's/^sweep [a-z_]* [a-z]* \([0-9A-Z]\{5\}\)$/\1/p' "$out" | sort | uniq -c | sort -rn |
        awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1}')"
}

sweep_logs() {
    local log
    for log in "$@"; do
        check "${log#"$SWEEP_DIR"/}: no backend terminated by a signal" "0" \
            "$(grep -c 'terminated by signal\|server process .* was terminated' "$log")"
    done
}
