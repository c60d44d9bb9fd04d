#!/usr/bin/env bash
# One step of a user_deletion run, in one process:   bash step.sh TENANT OWNER
#
# A worker of the demo's workflow (workflow.sql). Each invocation runs at most one stage
# handler and commits its transition, leaving the successor pending for the next one:
#   1. baton.acquire_next_run(tenant, 'user_deletion', owner, lease): the oldest runnable
#      run (approved or running, lease free or expired, no retry deadline ahead).
#      None: nothing to do, exit.
#   2. baton.transition_stage: the run's saved current stage (kind 'stage'), 'wait' (a
#      failed stage before its retry deadline) or 'finished'.
#   3. For a stage: baton.start_stage (committed: the stage is 'running', attempt + 1),
#      then the stage's handler. The handlers only print what they would do.
#   4. In ONE transaction: baton.complete_stage with the handler's result and
#      baton.transition_stage, which calls the decide function, saves the decision and
#      leaves the successor pending (or ends the run). When the handler fails:
#      baton.fail_stage and transition_stage (which then answers 'wait').
#   5. baton.release_run, so that the next invocation, in any process, takes the run at once.
# A worker killed anywhere in between loses nothing that was committed: its lease
# expires, and the next invocation's transition_stage returns the saved current stage.
#
# Environment: PGHOST, PGPORT, PGUSER, PGDATABASE (the cluster), and optionally
#   UD_LEASE    the run's lease (default '4 seconds')
#   UD_AGENTS   the communities where purge_db finds agents of the user (default "c1 c3")
#   UD_DIR      a scratch directory for one-shot faults and a report:
#                 fail-<stage>-<community>  that handler fails once (the file is removed)
#                 hang-<stage>-<community>  that handler hangs once until killed (the file is
#                                           removed; "<stage_id> <generation>" goes to held)
#                 report                    what this invocation did, as W_<key>=<value> lines
#   UD_COLOR    an escape sequence for this worker's lines (default: none)
set -euo pipefail

if (($# != 2)); then
    echo "usage: step.sh TENANT OWNER" >&2
    exit 2
fi
TENANT=$1
OWNER=$2
LEASE=${UD_LEASE:-4 seconds}
AGENTS=" ${UD_AGENTS:-c1 c3} "
DIR=${UD_DIR:-}
COLOR=${UD_COLOR:-}
RESET=""
[[ -n $COLOR ]] && RESET=$'\e[0m'
SEP=$'\x1f' # field separator of query results

say() { printf '  %s%-8s │ %s%s\n' "$COLOR" "$OWNER" "$*" "$RESET"; }

# q: runs the SQL on stdin with psql variables :'tenant', :'owner', :'lease', :'run',
# :gen, :sid and any -v given; prints unaligned rows (fields separated by SEP).
RUN="" GEN=0 SID=0
q() {
    psql -X -q -At -F "$SEP" -v ON_ERROR_STOP=1 -v tenant="$TENANT" -v owner="$OWNER" \
        -v lease="$LEASE" -v run="$RUN" -v gen="$GEN" -v sid="$SID" "$@"
}

# report KEY=VALUE...: what this invocation did, for the demo to check.
report() {
    [[ -n $DIR ]] || return 0
    local kv
    for kv in "owner=$OWNER" "run=$RUN" "generation=$GEN" "$@"; do
        printf 'W_%s=%q\n' "${kv%%=*}" "${kv#*=}"
    done >"$DIR/report.tmp"
    mv "$DIR/report.tmp" "$DIR/report"
}

# --- 1. take a runnable run ----------------------------------------------------------------
row=$(q <<'SQL'
SELECT run_id, generation FROM baton.acquire_next_run(:'tenant', 'user_deletion', :'owner', :'lease');
SQL
)
if [[ -z $row ]]; then
    say "acquire_next_run → no runnable run: nothing to do"
    report outcome=idle
    exit 0
fi
IFS=$SEP read -r RUN GEN <<<"$row"
say "acquire_next_run → run ${RUN:0:8}…, generation $GEN (lease $LEASE)"

release() {
    q <<'SQL' >/dev/null
SELECT baton.release_run(:'tenant', :'run', :gen);
SQL
    say "release_run"
}

# --- 2. the saved current stage ------------------------------------------------------------
row=$(q <<'SQL'
SELECT kind, stage_id, stage, entry_seq, inputs, attempt, to_char(wait_until, 'HH24:MI:SS.MS'), run_status
  FROM baton.transition_stage(:'tenant', :'run', :gen);
SQL
)
IFS=$SEP read -r KIND SID STAGE SEQ INPUTS ATTEMPT WAIT_UNTIL RUN_STATUS <<<"$row"
case $KIND in
    finished)
        say "transition_stage → finished: the run is $RUN_STATUS"
        release
        report outcome=finished "run_status=$RUN_STATUS"
        exit 0
        ;;
    wait)
        say "transition_stage → wait: $STAGE #$SEQ failed, not before $WAIT_UNTIL"
        release
        report outcome=waiting "stage_id=$SID" "wait_until=$WAIT_UNTIL"
        exit 0
        ;;
esac
say "transition_stage → stage $STAGE #$SEQ (stage_id $SID, attempts so far $ATTEMPT), inputs $INPUTS"

# --- 3. start it and run its handler -------------------------------------------------------
row=$(q <<'SQL'
SELECT s.inputs->>'community', r.inputs->>'user', r.inputs->>'communities'
  FROM baton.start_stage(:'tenant', :'run', :gen, :sid) AS s(inputs),
       baton.run(:'tenant', :'run') AS r;
SQL
)
IFS=$SEP read -r COMMUNITY USER_ID INVENTORY <<<"$row"
ATTEMPT=$((ATTEMPT + 1))
say "start_stage → running, attempt $ATTEMPT"

RESULT="" ERROR=""
handle_gate_user() {
    say "handler gate_user: would check that $USER_ID exists, block their sign-in, freeze inventory $INVENTORY"
    RESULT="{\"user_blocked\": true, \"by\": \"$OWNER\"}"
}
handle_purge_db() {
    local has_agents=false
    [[ $AGENTS == *" $COMMUNITY "* ]] && has_agents=true
    say "handler purge_db: would delete rows of $USER_ID in community $COMMUNITY (agents there: $has_agents)"
    RESULT="{\"has_agents\": $has_agents, \"by\": \"$OWNER\"}"
}
handle_purge_agents() {
    say "handler purge_agents: would stop and delete the agents of $USER_ID in community $COMMUNITY"
    RESULT="{\"agents_deleted\": true, \"by\": \"$OWNER\"}"
}

"handle_$STAGE"
fault=$STAGE-${COMMUNITY:-all}
if [[ -n $DIR && -e $DIR/hang-$fault ]]; then
    rm -f -- "$DIR/hang-$fault"
    say "... (the handler hangs here, holding the run)"
    echo "$SID $GEN $STAGE $SEQ" >"$DIR/held.tmp"
    mv "$DIR/held.tmp" "$DIR/held"
    exec sleep 600 # this process is a hung worker until it is killed
fi
if [[ -n $DIR && -e $DIR/fail-$fault ]]; then
    rm -f -- "$DIR/fail-$fault"
    ERROR="connection to the $COMMUNITY database reset by peer"
    say "handler $STAGE FAILED: $ERROR"
fi

# --- 4. settle the stage and commit its transition, in one transaction ----------------------
if [[ -n $ERROR ]]; then
    mapfile -t out < <(q -v error="$ERROR" <<'SQL'
BEGIN;
SELECT to_char(baton.fail_stage(:'tenant', :'run', :gen, :sid, :'error'), 'HH24:MI:SS.MS');
SELECT kind, to_char(wait_until, 'HH24:MI:SS.MS') FROM baton.transition_stage(:'tenant', :'run', :gen);
COMMIT;
SQL
    )
    ((${#out[@]} == 2)) || { echo "step.sh: unexpected answer: ${out[*]}" >&2; exit 1; }
    IFS=$SEP read -r next_kind wait_until <<<"${out[1]}"
    say "fail_stage → retry at ${out[0]}"
    say "  + transition_stage, in the same transaction → $next_kind until $wait_until"
    release
    report outcome=failed "stage_id=$SID" "stage=$STAGE" "entry_seq=$SEQ" "attempt=$ATTEMPT" \
        "next_kind=$next_kind" "wait_until=$wait_until"
    exit 0
fi

row=$(q -v result="$RESULT" <<'SQL'
BEGIN;
SELECT baton.complete_stage(:'tenant', :'run', :gen, :sid, :'result') \g /dev/null
SELECT kind, stage, entry_seq, inputs, run_status FROM baton.transition_stage(:'tenant', :'run', :gen);
COMMIT;
SQL
)
IFS=$SEP read -r next_kind next_stage next_seq next_inputs run_status <<<"$row"
say "complete_stage $RESULT"
if [[ $next_kind == stage ]]; then
    say "  + transition_stage, in the same transaction → $next_stage #$next_seq pending, inputs $next_inputs"
else
    say "  + transition_stage, in the same transaction → $next_kind: the run is $run_status"
fi

# --- 5. give the run back --------------------------------------------------------------------
release
report outcome=completed "stage_id=$SID" "stage=$STAGE" "entry_seq=$SEQ" "attempt=$ATTEMPT" \
    "next_kind=$next_kind" "next_stage=$next_stage" "run_status=$run_status"
