# shellcheck shell=bash
# Part 2 of the demo, sourced by demo/run.sh after the deliveries, in the same cluster:
# a user-deletion request over an inventory of communities, walked through the workflow
# engine one step per worker process (step.sh).
#   1. the workflow: the application's decide function and definition (workflow.sql)
#   2. the request is submitted; before approval a worker finds nothing to do and
#      transition_stage refuses to start it (DU007)
#   3. the approval is bound to the inputs' digest: a wrong one is DU006
#   4. worker invocations advance the run, one stage each
#   5. a purge_db fails once: 'wait' until its deadline, then the same row again, attempt 2
#   6. a worker is killed mid-stage: once its lease expires, the next worker resumes the
#      saved stage under generation G+1, and the dead worker's generation G is fenced (DU001)
#   7. final state and checks
# Uses run.sh's helpers (say, ok, fail), colours, STATE, WORKER_PIDS and its cluster.

UD_HERE=$ROOT/demo/user_deletion
UD_TENANT=d3e0d3e0-0000-4000-8000-00000000de1e
UD_LEASE='4 seconds'
UD_AGENTS='c1 c3' # where purge_db finds agents of the user
# shellcheck disable=SC2153  # STATE is run.sh's scratch directory
UD_DIR=$STATE/user_deletion # one-shot faults for the handlers, and the workers' reports
UD_RUN=""
UD_STEPS=7
UD_CHECKS=1
mkdir -p "$UD_DIR"

ud_step() {
    printf '\n%s━━ Part 2 · Step %s/%s · %s%s\n' "$B" "$1" "$UD_STEPS" "$2" "$N"
}

# psql with this part's variables: :'tenant', :'run' and :'lease' in the SQL shown are
# the tenant, the run's id and the lease (psql interpolates them).
ud_psql() {
    psql -X -q -v ON_ERROR_STOP=1 -v tenant="$UD_TENANT" -v run="$UD_RUN" -v lease="$UD_LEASE" "$@"
}
# ud_show SQL: prints the statement, runs it and prints its result table, indented.
ud_show() {
    printf '  %ssql> %s%s\n' "$D" "$1" "$N"
    printf '%s;\n' "$1" | ud_psql -P footer=off | sed 's/^./    &/'
}
# ud_run SQL: prints the statement and runs it (its result says nothing).
ud_run() {
    printf '  %ssql> %s%s\n' "$D" "$1" "$N"
    printf '%s;\n' "$1" | ud_psql -o /dev/null
}
# ud_q SQL: one value or unaligned rows (fields separated by |), for the script to use.
ud_q() {
    printf '%s;\n' "$1" | ud_psql -At -F '|'
}
# ud_value SQL: prints the statement and its one value; the value goes to UD_VALUE.
ud_value() {
    printf '  %ssql> %s%s\n' "$D" "$1" "$N"
    UD_VALUE=$(ud_q "$1")
    printf '    -> %s\n' "$UD_VALUE"
}
# ud_refused SQL SQLSTATE: prints the statement and the error it must raise; fails the
# demo unless it is refused with that SQLSTATE.
ud_refused() {
    local out rc=0 state
    printf '  %ssql> %s%s\n' "$D" "$1" "$N"
    out=$(printf '%s;\n' "$1" | ud_psql -v VERBOSITY=verbose -v SHOW_CONTEXT=never 2>&1) || rc=$?
    grep -v '^LOCATION:' <<<"$out" | sed "s/^/    $R/; s/\$/$N/"
    state=$(sed -n 's/^ERROR: *\([0-9A-Z]\{5\}\):.*/\1/p' <<<"$out" | head -n 1)
    ((rc != 0)) || fail "it was accepted"
    [[ $state == "$2" ]] || fail "expected SQLSTATE $2, got '${state}'"
}
# ud_check DESCRIPTION 1|0
ud_check() {
    if (($2)); then ok "$1"; else
        printf '  %s✘ %s%s\n' "$R" "$1" "$N"
        UD_CHECKS=0
    fi
}

# ud_worker N: one invocation of step.sh as worker-N, in the foreground; its report is
# read into W_* variables (W_outcome: idle, waiting, failed, completed, finished).
ud_worker() {
    local n=$1
    rm -f -- "$UD_DIR/report"
    UD_DIR=$UD_DIR UD_LEASE=$UD_LEASE UD_AGENTS=$UD_AGENTS UD_COLOR=${WORKER_COLOR[n]} \
        bash "$UD_HERE/step.sh" "$UD_TENANT" "worker-$n" || fail "worker-$n failed"
    W_outcome="" W_generation="" W_stage_id="" W_attempt="" W_next_kind="" W_run_status=""
    # shellcheck source=/dev/null
    source "$UD_DIR/report"
}

# The chain in one line: stage#entry_seq:status:attempt, * on the current stage.
ud_chain() {
    ud_q "SELECT coalesce(string_agg(stage || '#' || entry_seq || ':' || status || ':' || attempt
                                     || CASE WHEN is_current THEN '*' ELSE '' END, ' '), '')
            FROM baton.run_history(:'tenant', :'run')"
}
ud_expect_chain() {
    local chain
    chain=$(ud_chain)
    [[ $chain == "$1" ]] || fail "unexpected stages: $chain (expected $1)"
}
UD_HISTORY="SELECT stage, entry_seq, status, attempt, is_current, inputs, transition - 'state' AS transition
        FROM baton.run_history(:'tenant', :'run')"
ud_history() {
    ud_show "$UD_HISTORY"
    printf '    %sthe run'"'"'s state: %s%s\n' "$D" "$(ud_q "SELECT state FROM baton.run(:'tenant', :'run')")" "$N"
}

# ud_sleep_until SQL: sleeps until the boolean SQL is true (checked every 0.1 s, 15 s at most).
ud_sleep_until() {
    local i
    for ((i = 0; i < 150; i++)); do
        [[ $(ud_q "$1") == t ]] && return 0
        sleep 0.1
    done
    fail "still not true after 15 s: $1"
}

# ========================================================================================
printf '\n\n%s━━━━ Part 2 · a workflow: delete user u-42 from every community of an approved inventory%s\n' "$B" "$N"
UD_START=$SECONDS

# --- 1 -----------------------------------------------------------------------------------
ud_step 1 "The workflow: the application's decide function and definition"
say "demo/user_deletion/workflow.sql is the application's code: a PL/pgSQL decide function"
say "app.user_deletion_decide(ctx jsonb) and the definition. The decide function routes:"
say "  gate_user                     -> purge_db of the first community of the inventory"
say "  purge_db with has_agents      -> purge_agents of the same community"
say "  purge_db without, purge_agents -> that community is done: purge_db of the next one,"
say "                                    or finish (completed) when none remains"
say "It keeps the progress in the run's state, {\"remaining\": [...], \"done\": [...]}."
printf '  %spsql -f demo/user_deletion/workflow.sql%s\n' "$D" "$N"
ud_psql -f "$UD_HERE/workflow.sql" -o /dev/null
ud_show "SELECT name, version, definition->>'start' AS start,
                definition->'requires_approval' AS requires_approval, decide
           FROM baton.workflows"
ud_show "SELECT s.key AS stage, s.value AS definition
           FROM baton.workflows w, jsonb_each(w.definition->'stages') s
          WHERE w.name = 'user_deletion'"
say "In the SQL of this part, :'tenant', :'run' and :'lease' are psql variables: the tenant"
say "$UD_TENANT, the run's id and '$UD_LEASE'."
ud_run "SELECT baton.create_tenant(:'tenant')"

# --- 2 -----------------------------------------------------------------------------------
ud_step 2 "Submit the request: nothing runs before approval"
UD_SUBMIT="SELECT baton.submit(:'tenant', 'user_deletion',
                           '{\"user\": \"u-42\", \"communities\": [\"c1\", \"c2\", \"c3\"]}',
                           idempotency_key => 'delete-u-42')"
ud_value "$UD_SUBMIT"
UD_RUN=$UD_VALUE
say "A retried submit (same key, same inputs) returns the same run:"
ud_value "$UD_SUBMIT"
[[ $UD_VALUE == "$UD_RUN" ]] || fail "the retried submit returned another run"
ud_show "SELECT status, inputs, approved_by FROM baton.run(:'tenant', :'run')"
say "A worker comes by: a submitted run is not runnable."
ud_worker 1
[[ $W_outcome == idle ]] || fail "the worker should have found nothing to do"
say "Even an owner that takes the run's lease cannot start it:"
ud_value "SELECT baton.acquire_run(:'tenant', :'run', 'eager-worker', :'lease') AS generation"
gen=$UD_VALUE
ud_refused "SELECT * FROM baton.transition_stage(:'tenant', :'run', $gen)" DU007
UD_SEEN_DU007=1
ud_run "SELECT baton.release_run(:'tenant', :'run', $gen)"
ud_show "SELECT status, (SELECT count(*) FROM baton.run_history(:'tenant', :'run')) AS stages
           FROM baton.run(:'tenant', :'run')"
[[ $(ud_q "SELECT status FROM baton.run(:'tenant', :'run')") == submitted && -z $(ud_chain) ]] \
    || fail "the refused transition changed the run"
ok "refused with DU007 (invalid_state): still submitted, no stage"

# --- 3 -----------------------------------------------------------------------------------
ud_step 3 "Approval is bound to the digest of the inputs"
ud_value "SELECT baton.inputs_digest(:'tenant', :'run')"
UD_DIGEST=$UD_VALUE
say "An approver looking at a stale copy of the request, which listed only c1 and c2,"
say "approves with the digest of what they saw:"
ud_refused "SELECT baton.approve(:'tenant', :'run', 'alice',
                             encode(sha256(convert_to('{\"user\": \"u-42\", \"communities\": [\"c1\", \"c2\"]}', 'UTF8')), 'hex'))" DU006
UD_SEEN_DU006=1
ud_show "SELECT status, approved_by FROM baton.run(:'tenant', :'run')"
[[ $(ud_q "SELECT status || '|' || coalesce(approved_by, '-') FROM baton.run(:'tenant', :'run')") == 'submitted|-' ]] \
    || fail "the refused approval changed the run"
say "With the digest of the run's inputs, as baton.inputs_digest gives it:"
ud_run "SELECT baton.approve(:'tenant', :'run', 'alice', '$UD_DIGEST')"
ud_show "SELECT status, approved_by, (SELECT count(*) FROM baton.run_history(:'tenant', :'run')) AS stages
           FROM baton.run(:'tenant', :'run')"
[[ $(ud_q "SELECT status || '|' || approved_by FROM baton.run(:'tenant', :'run')") == 'approved|alice' ]] \
    || fail "the run should be approved by alice"
ok "DU006 (digest_mismatch) for the stale digest; approved by alice with the right one (no stage yet)"

# --- 4 -----------------------------------------------------------------------------------
ud_step 4 "Workers advance the run, one stage per process (demo/user_deletion/step.sh)"
say "Each invocation: acquire_next_run; transition_stage (the saved current stage);"
say "start_stage; the handler; then complete_stage + transition_stage in ONE transaction,"
say "which decides and leaves the successor pending; release_run. Then the process exits."
say "After each step, the run's stages (each transition is the decision saved on its stage;"
say "the state it carries is shown once, as the run's state, below the table):"
echo
ud_worker 1
ud_history
ud_expect_chain "gate_user#1:completed:1 purge_db#1:pending:0*"
echo
ud_worker 2
ud_history
ud_expect_chain "gate_user#1:completed:1 purge_db#1:completed:1 purge_agents#1:pending:0*"
echo
ud_worker 3
ud_history
ud_expect_chain "gate_user#1:completed:1 purge_db#1:completed:1 purge_agents#1:completed:1 purge_db#2:pending:0*"
ok "one stage per invocation; purge_agents ran for c1 because purge_db found agents there"

# --- 5 -----------------------------------------------------------------------------------
ud_step 5 "purge_db fails once for c2: it waits for its deadline, then the same row again"
say "The demo plants a one-shot fault: purge_db's handler fails the next time it runs for c2."
: >"$UD_DIR/fail-purge_db-c2"
echo
ud_worker 1
[[ $W_outcome == failed && $W_next_kind == wait ]] || fail "worker-1 should have failed the stage"
UD_FAILED_SID=$W_stage_id
ud_show "SELECT stage, entry_seq, status, attempt, error, to_char(retry_at, 'HH24:MI:SS.MS') AS retry_at
           FROM baton.run_history(:'tenant', :'run') WHERE is_current"
UD_BEFORE=$(ud_chain)
UD_GEN_BEFORE=$(ud_q "SELECT generation FROM baton.run(:'tenant', :'run')")
say "Asked before the deadline, transition_stage answers 'wait' with the deadline:"
ud_value "SELECT baton.acquire_run(:'tenant', :'run', 'operator', :'lease') AS generation"
gen=$UD_VALUE
ud_show "SELECT kind, stage, entry_seq, attempt, to_char(wait_until, 'HH24:MI:SS.MS') AS wait_until,
                wait_until > now() AS ahead, run_status
           FROM baton.transition_stage(:'tenant', :'run', $gen)"
[[ $(ud_q "SELECT kind FROM baton.transition_stage(:'tenant', :'run', $gen)") == wait ]] \
    || fail "transition_stage should answer wait"
ud_run "SELECT baton.release_run(:'tenant', :'run', $gen)"
say "A worker before the deadline: acquire_next_run skips a run whose stage waits for its retry."
ud_worker 3
[[ $W_outcome == idle ]] || fail "worker-3 should have found nothing to do before the deadline"
[[ $(ud_chain) == "$UD_BEFORE" && $(ud_q "SELECT generation FROM baton.run(:'tenant', :'run')") == $((UD_GEN_BEFORE + 2)) ]] \
    || fail "something changed before the deadline"
wait_s=$(ud_q "SELECT round(greatest(0, extract(epoch FROM retry_at - now()))::numeric, 1)
                 FROM baton.run_history(:'tenant', :'run') WHERE is_current")
say "The retry deadline is ${wait_s} s away. Waiting ..."
ud_sleep_until "SELECT retry_at <= now() FROM baton.run_history(:'tenant', :'run') WHERE is_current"
echo
ud_worker 3
[[ $W_outcome == completed && $W_stage_id == "$UD_FAILED_SID" && $W_attempt == 2 ]] \
    || fail "worker-3 should have completed the same stage (stage_id $UD_FAILED_SID) at attempt 2"
ud_history
ud_expect_chain "gate_user#1:completed:1 purge_db#1:completed:1 purge_agents#1:completed:1 purge_db#2:completed:2 purge_db#3:pending:0*"
ok "the same row (stage_id $UD_FAILED_SID, purge_db #2) retried after its deadline: attempt 2, completed"

# --- 6 -----------------------------------------------------------------------------------
ud_step 6 "A worker is killed mid-stage; the next one resumes the saved stage"
ud_worker 1
ud_history
ud_expect_chain "gate_user#1:completed:1 purge_db#1:completed:1 purge_agents#1:completed:1 purge_db#2:completed:2 purge_db#3:completed:1 purge_agents#2:pending:0*"
echo
say "The demo plants a hang: purge_agents' handler for c3 will never return. worker-2 runs it:"
: >"$UD_DIR/hang-purge_agents-c3"
rm -f -- "$UD_DIR/held"
UD_DIR=$UD_DIR UD_LEASE=$UD_LEASE UD_AGENTS=$UD_AGENTS UD_COLOR=${WORKER_COLOR[2]} \
    bash "$UD_HERE/step.sh" "$UD_TENANT" worker-2 &
UD_PID=$!
WORKER_PIDS+=("$UD_PID")
for _ in $(seq 1 200); do
    [[ -s $UD_DIR/held ]] && break
    kill -0 "$UD_PID" 2>/dev/null || break
    sleep 0.05
done
[[ -s $UD_DIR/held ]] || fail "worker-2 never got into the purge_agents handler"
read -r HELD_SID HELD_GEN HELD_STAGE HELD_SEQ <"$UD_DIR/held"
kill -9 "$UD_PID"
wait "$UD_PID" 2>/dev/null || true
WORKER_PIDS=()
printf '  %s%s💥 kill -9 worker-2 (pid %s): it dies in the handler of %s #%s (stage_id %s), generation %s%s\n' \
    "$R" "$B" "$UD_PID" "$HELD_STAGE" "$HELD_SEQ" "$HELD_SID" "$HELD_GEN" "$N"
ud_show "SELECT status, owner, generation, lease_until > now() AS lease_live FROM baton.run(:'tenant', :'run')"
ud_show "SELECT stage, entry_seq, status, attempt, is_current
           FROM baton.run_history(:'tenant', :'run') WHERE is_current"
[[ $(ud_q "SELECT owner || '|' || generation FROM baton.run(:'tenant', :'run')") == "worker-2|$HELD_GEN" ]] \
    || fail "the run should be held by worker-2 at generation $HELD_GEN"
[[ $(ud_q "SELECT stage || '|' || entry_seq || '|' || status || '|' || attempt
             FROM baton.run_history(:'tenant', :'run') WHERE is_current") == "purge_agents|2|running|1" ]] \
    || fail "purge_agents #2 should be running (attempt 1)"
ok "purge_agents #2 is 'running' under generation $HELD_GEN, whose holder is dead"
say "A worker right away: the dead worker's lease has not expired, so the run is not runnable."
ud_worker 3
[[ $W_outcome == idle ]] || fail "worker-3 should have found nothing to do while the lease is live"
wait_s=$(ud_q "SELECT round(greatest(0, extract(epoch FROM lease_until - now()))::numeric, 1)
                 FROM baton.run(:'tenant', :'run')")
say "The lease runs out in ${wait_s} s. Waiting ..."
ud_sleep_until "SELECT lease_until < now() FROM baton.run(:'tenant', :'run')"
echo
ud_worker 3
[[ $W_generation == $((HELD_GEN + 1)) ]] || fail "worker-3 should hold generation $((HELD_GEN + 1)), got $W_generation"
[[ $W_outcome == completed && $W_stage_id == "$HELD_SID" && $W_attempt == 2 ]] \
    || fail "worker-3 should have resumed stage_id $HELD_SID (attempt 2)"
[[ $W_next_kind == finished && $W_run_status == completed ]] || fail "the run should be completed"
ok "worker-3 took generation $W_generation, got the SAME stage back (stage_id $HELD_SID) and completed it"
say "The dead worker's late complete_stage (a stalled, not dead, worker would send it now),"
say "with its generation $HELD_GEN:"
ud_refused "SELECT baton.complete_stage(:'tenant', :'run', $HELD_GEN, $HELD_SID, '{\"agents_deleted\": true, \"by\": \"worker-2\"}')" DU001
UD_SEEN_DU001=1
say "(generation $((HELD_GEN + 1)) was worker-3's; its release_run moved the run on to $((HELD_GEN + 2)).)"
ud_show "SELECT stage, entry_seq, status, attempt, result
           FROM baton.run_history(:'tenant', :'run') WHERE is_current"
[[ $(ud_q "SELECT result->>'by' FROM baton.run_history(:'tenant', :'run') WHERE is_current") == worker-3 ]] \
    || fail "the refused complete_stage changed the stage"
ok "SQLSTATE DU001 (lease_lost): generation $HELD_GEN is fenced; worker-3's result stands"

# --- 7 -----------------------------------------------------------------------------------
ud_step 7 "Final state"
ud_show "SELECT status, reason, state, generation, owner FROM baton.run(:'tenant', :'run')"
say "The whole chain, in predecessor order: what each stage was given and what it saved ..."
ud_show "SELECT stage, entry_seq, status, attempt, is_current, inputs, result
           FROM baton.run_history(:'tenant', :'run')"
say "... and the decision saved on each stage, with the state it carried forward:"
ud_show "SELECT stage, entry_seq, transition FROM baton.run_history(:'tenant', :'run')"
say "A last worker finds nothing: a completed run is not runnable."
ud_worker 1
[[ $W_outcome == idle ]] || fail "a completed run should not be runnable"

IFS='|' read -r ud_status ud_state_ok ud_agents_ok < <(ud_q "
    SELECT r.status,
           r.state->'done' = r.inputs->'communities' AND r.state->'remaining' = '[]',
           (SELECT coalesce(jsonb_agg(s.inputs->'community' ORDER BY s.inputs->>'community'), '[]')
              FROM baton.run_history(:'tenant', :'run') s WHERE s.stage = 'purge_agents')
           = (SELECT coalesce(jsonb_agg(s.inputs->'community' ORDER BY s.inputs->>'community'), '[]')
                FROM baton.run_history(:'tenant', :'run') s
               WHERE s.stage = 'purge_db' AND (s.result->>'has_agents')::boolean)
      FROM baton.run(:'tenant', :'run') r")
ud_chain_final=$(ud_chain)
ud_expected="gate_user#1:completed:1 purge_db#1:completed:1 purge_agents#1:completed:1 purge_db#2:completed:2 purge_db#3:completed:1 purge_agents#2:completed:2*"
ud_check "the run is completed" "$([[ $ud_status == completed ]] && echo 1 || echo 0)"
ud_check "the state shows every community of the inventory done, none remaining" \
    "$([[ $ud_state_ok == t ]] && echo 1 || echo 0)"
ud_check "purge_agents ran exactly for the communities where purge_db found agents (c1, c3)" \
    "$([[ $ud_agents_ok == t ]] && echo 1 || echo 0)"
ud_check "the chain: gate_user, purge_db c1, purge_agents c1, purge_db c2 (attempt 2), purge_db c3, purge_agents c3 (attempt 2)" \
    "$([[ $ud_chain_final == "$ud_expected" ]] && echo 1 || echo 0)"
ud_check "refusals: DU007 before approval, DU006 for the stale digest, DU001 for the dead worker" \
    $((${UD_SEEN_DU007:-0} && ${UD_SEEN_DU006:-0} && ${UD_SEEN_DU001:-0}))
echo
if ((UD_CHECKS == 1)); then
    printf '  %s%su-42 deleted from c1, c2, c3: one failure retried, one crash resumed (part 2: %d s)%s\n' \
        "$G" "$B" "$((SECONDS - UD_START))" "$N"
else
    printf '  %s%sthe user_deletion run did not end as expected (chain: %s)%s\n' "$R" "$B" "$ud_chain_final" "$N"
    exit 1
fi
