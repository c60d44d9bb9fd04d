# shellcheck shell=bash
# Part 1 of the demo, sourced by demo/run.sh once the cluster, the extension and the
# tenant are up (step 1): leased deliveries at work.
#   2. 12 deliveries for two targets (baton.enqueue and baton.enqueue_batch)
#   3. three competing workers drain them; worker-3 is killed with kill -9 mid-lease
#   4. the dead worker's delivery is stuck as claimed
#   5. its lease expires; baton.reap() gives it back (generation + 1)
#   6. a surviving worker claims it again (attempt 2) and finishes it
#   7. the dead holder's late finish is refused with DU001: it is fenced
#   8. final state and checks: every delivery finished exactly once, none lost
# Uses run.sh's settings (TENANT, LEASE), helpers (step, say, ok, fail, show, run, q),
# colours, STATE and WORKER_PIDS.

# --- a worker --------------------------------------------------------------------------
# worker N: claims one delivery at a time ('email' and 'thumbnail' in turn, the other one
# when its turn is empty), "works" a short random time, finishes it with a result naming
# itself, and stops once neither target has anything to claim. Every claim and finish
# goes to a log the final checks read. worker-3 (when HANG_ON_CLAIM is set) "works" on
# its HANG_ON_CLAIM-th delivery forever: it writes what it holds to $STATE/held and
# sleeps, until the demo kills it.
worker() {
    local n=$1 name="worker-$1" color=${WORKER_COLOR[$1]}
    local targets=(email thumbnail) turn=$((n % 2)) claims=0
    local row target id gen key attempt status
    RANDOM=$((BASHPID + n))
    while true; do
        row=""
        for target in "${targets[turn]}" "${targets[1 - turn]}"; do
            row=$(q "SELECT id, generation, dedup_key, attempt
                       FROM baton.claim('$TENANT', '$target', '$LEASE', 1)")
            [[ -n $row ]] && break
        done
        if [[ -z $row ]]; then
            printf '  %s%s: nothing left to claim, stopping%s\n' "$color" "$name" "$N"
            return 0
        fi
        turn=$((1 - turn))
        IFS='|' read -r id gen key attempt <<<"$row"
        claims=$((claims + 1))
        echo "$id $gen $name" >>"$STATE/claims"
        printf '  %s%s claimed  %-9s #%-2s %-14s (generation %s, attempt %s)%s\n' \
            "$color" "$name" "$target" "$id" "$key" "$gen" "$attempt" "$N"

        if ((n == 3 && claims == ${HANG_ON_CLAIM:-0})); then
            printf '  %s%s is working on %s #%s ... (this one takes a long time)%s\n' \
                "$color" "$name" "$target" "$id" "$N"
            echo "$id $gen $target $key" >"$STATE/held.tmp"
            mv "$STATE/held.tmp" "$STATE/held"
            exec sleep 600 # this process is worker-3 until it is killed
        fi

        sleep "0.$((10 + RANDOM % 40))" # "work": 0.10 to 0.49 s
        status=$(q "SELECT baton.finish('$TENANT', $id, $gen, 'finished',
                                        jsonb_build_object('by', '$name'))")
        echo "$id $gen $name $status" >>"$STATE/finishes"
        printf '  %s%s finished %-9s #%-2s -> %s%s\n' "$color" "$name" "$target" "$id" "$status" "$N"
    done
}

# --- 2 -----------------------------------------------------------------------------------
step 2 "Enqueue work for two targets: 'email' and 'thumbnail', 6 each"
say "email: one baton.enqueue call each (two are urgent: priority 10):"
printf '  %ssql> SELECT baton.enqueue(tenant, %s, %s,\n%28s%s,\n%28s%s)%s\n' "$D" "'email'" "'welcome-user-N'" "" \
    "payload => '{\"to\": \"userN@example.com\", \"template\": \"welcome\"}'" "" "priority => P" "$N"
for i in 1 2 3 4 5 6; do
    prio=0
    ((i == 3 || i == 5)) && prio=10
    id=$(q "SELECT baton.enqueue('$TENANT', 'email', 'welcome-user-$i',
                                 payload => '{\"to\": \"user$i@example.com\", \"template\": \"welcome\"}',
                                 priority => $prio)")
    printf '    N = %s, P = %2s  -> id %s\n' "$i" "$prio" "$id"
done
say "thumbnail: all six in one baton.enqueue_batch call (one is urgent):"
show "SELECT id, inserted FROM baton.enqueue_batch('$TENANT', '[
          {\"target\": \"thumbnail\", \"dedup_key\": \"photo-1\", \"payload\": {\"size\": 128}},
          {\"target\": \"thumbnail\", \"dedup_key\": \"photo-2\", \"payload\": {\"size\": 128}},
          {\"target\": \"thumbnail\", \"dedup_key\": \"photo-3\", \"payload\": {\"size\": 512}, \"priority\": 10},
          {\"target\": \"thumbnail\", \"dedup_key\": \"photo-4\", \"payload\": {\"size\": 128}},
          {\"target\": \"thumbnail\", \"dedup_key\": \"photo-5\", \"payload\": {\"size\": 128}},
          {\"target\": \"thumbnail\", \"dedup_key\": \"photo-6\", \"payload\": {\"size\": 128}}]')"
show "SELECT target, pending, claimed, finished, failed, expired_leases
        FROM baton.delivery_stats ORDER BY target"
[[ $(q "SELECT count(*) FILTER (WHERE status = 'pending') || '/' || count(*)
          FROM baton.deliveries") == 12/12 ]] || fail "expected 12 pending deliveries"

# --- 3 -----------------------------------------------------------------------------------
step 3 "Three competing workers drain both queues (lease: $LEASE)"
say "Each loop: baton.claim(tenant, target, '$LEASE', 1), a short random \"work\","
say "then baton.finish(tenant, id, generation, 'finished', result). Urgent ones come first."
say "worker-3 will hang on its 2nd delivery, and the demo will kill -9 it right there."
echo
: >"$STATE/claims"
: >"$STATE/finishes"
for n in 1 2 3; do
    HANG_ON_CLAIM=2 worker "$n" &
    WORKER_PIDS+=("$!")
done
W3=${WORKER_PIDS[2]}

# Wait for worker-3 to hold its long delivery, then kill it: no finish, no retry, no goodbye.
for _ in $(seq 1 200); do
    [[ -s $STATE/held ]] && break
    kill -0 "$W3" 2>/dev/null || break
    sleep 0.05
done
[[ -s $STATE/held ]] || fail "worker-3 never got to its 2nd delivery"
read -r HELD_ID HELD_GEN HELD_TARGET HELD_KEY <"$STATE/held"
kill -9 "$W3"
wait "$W3" 2>/dev/null || true
printf '  %s%s💥 kill -9 worker-3 (pid %s): it dies holding %s #%s %s at generation %s%s\n' \
    "$R" "$B" "$W3" "$HELD_TARGET" "$HELD_ID" "$HELD_KEY" "$HELD_GEN" "$N"
for pid in "${WORKER_PIDS[0]}" "${WORKER_PIDS[1]}"; do
    wait "$pid" || fail "a worker failed (exit status $?)"
done
WORKER_PIDS=()

# --- 4 -----------------------------------------------------------------------------------
step 4 "worker-3 died mid-lease: its delivery is stuck as 'claimed'"
say "The other workers found nothing left to claim and stopped: a claimed row is not claimable."
show "SELECT id, target, dedup_key, status, generation, attempts,
             to_char(lease_until, 'HH24:MI:SS.MS') AS lease_until,
             lease_until > now() AS lease_live
        FROM baton.delivery('$TENANT', $HELD_ID)"
show "SELECT target, pending, claimed, finished, failed, expired_leases
        FROM baton.delivery_stats ORDER BY target"
[[ $(q "SELECT status || ' ' || generation FROM baton.delivery('$TENANT', $HELD_ID)") == "claimed $HELD_GEN" ]] \
    || fail "delivery $HELD_ID should be claimed at generation $HELD_GEN"
[[ $(q "SELECT count(*) FROM baton.deliveries WHERE status = 'finished'") == 11 ]] \
    || fail "the 11 other deliveries should be finished"

# --- 5 -----------------------------------------------------------------------------------
step 5 "The lease expires; the reaper gives the delivery back"
wait_s=$(q "SELECT round(greatest(0, extract(epoch FROM lease_until - now()))::numeric, 1)
              FROM baton.delivery('$TENANT', $HELD_ID)")
say "The lease runs out in ${wait_s} s. Waiting ..."
sleep "$wait_s"
while [[ $(q "SELECT lease_until < now() FROM baton.delivery('$TENANT', $HELD_ID)") != t ]]; do
    sleep 0.1
done
say "Expired, yet still 'claimed': expiry alone moves nothing, and a claim gets nothing:"
show "SELECT target, claimed, expired_leases FROM baton.delivery_stats ORDER BY target"
show "SELECT count(*) AS rows_claimed FROM baton.claim('$TENANT', '$HELD_TARGET', '$LEASE', 10)"
say "baton.reap() is what returns expired leases (it bumps the generation):"
reaped=$(q "SELECT baton.reap()")
printf '  %ssql> SELECT baton.reap()%s\n    -> %s row reaped\n' "$D" "$N" "$reaped"
[[ $reaped == 1 ]] || fail "baton.reap() should reap exactly 1 row, got $reaped"
show "SELECT id, status, generation, attempts, lease_until, last_error
        FROM baton.delivery('$TENANT', $HELD_ID)"
[[ $(q "SELECT status || '|' || generation || '|' || attempts || '|' || last_error
          FROM baton.delivery('$TENANT', $HELD_ID)") == "pending|$((HELD_GEN + 1))|1|lease expired" ]] \
    || fail "after reap: expected pending, generation $((HELD_GEN + 1)), last_error 'lease expired'"
ok "back to pending with generation $HELD_GEN + 1 = $((HELD_GEN + 1)): generation $HELD_GEN no longer holds it"

# --- 6 -----------------------------------------------------------------------------------
step 6 "A surviving worker claims it again and finishes it"
say "worker-1 polls once more:"
worker 1
redelivered=$(tail -n 1 "$STATE/claims")
NEW_GEN=$((HELD_GEN + 2))
[[ $redelivered == "$HELD_ID $NEW_GEN worker-1" ]] \
    || fail "worker-1 should have claimed #$HELD_ID at generation $NEW_GEN (got: $redelivered)"
show "SELECT id, status, generation, attempts, result
        FROM baton.delivery('$TENANT', $HELD_ID)"
ok "redelivered: attempt 2 under generation $NEW_GEN, finished by worker-1"

# --- 7 -----------------------------------------------------------------------------------
step 7 "The dead holder comes back late: its finish is refused"
say "worker-3's process is gone, but its finish can still arrive late: a worker that was"
say "stalled rather than dead (a long GC pause, a network partition) reports back now"
say "with the generation it was given, $HELD_GEN:"
late_sql="SELECT baton.finish('$TENANT', $HELD_ID, $HELD_GEN, 'finished', '{\"by\": \"worker-3\"}')"
printf '  %ssql> %s%s\n' "$D" "$late_sql" "$N"
late_rc=0
late_out=$(psql -X -q -v VERBOSITY=verbose -v SHOW_CONTEXT=never -c "$late_sql" 2>&1) || late_rc=$?
grep -v '^LOCATION:' <<<"$late_out" | sed "s/^/    $R/; s/\$/$N/"
sqlstate=$(sed -n 's/^ERROR: *\([0-9A-Z]\{5\}\):.*/\1/p' <<<"$late_out" | head -n 1)
((late_rc != 0)) || fail "the late finish was accepted"
[[ $sqlstate == DU001 ]] || fail "expected SQLSTATE DU001 (lease_lost), got '${sqlstate}'"
show "SELECT id, status, generation, attempts, result
        FROM baton.delivery('$TENANT', $HELD_ID)"
[[ $(q "SELECT status || ' ' || generation || ' ' || (result->>'by')
          FROM baton.delivery('$TENANT', $HELD_ID)") == "finished $NEW_GEN worker-1" ]] \
    || fail "the refused finish changed the row"
ok "SQLSTATE $sqlstate (lease_lost): the dead holder is fenced; worker-1's result stands"

# --- 8 -----------------------------------------------------------------------------------
step 8 "Final state"
show "SELECT target, pending, claimed, finished, failed, expired_leases
        FROM baton.delivery_stats ORDER BY target"
show "SELECT id, target, dedup_key, priority, status, generation, attempts,
             result->>'by' AS finished_by
        FROM baton.deliveries ORDER BY id"

total=$(q "SELECT count(*) FROM baton.deliveries WHERE tenant = '$TENANT'")
finished=$(q "SELECT count(*) FROM baton.deliveries WHERE tenant = '$TENANT' AND status = 'finished'")
lost=$((total - finished))
# Claims: no (id, generation) was handed out twice; one claim per delivery, plus the redelivery.
claims=$(wc -l <"$STATE/claims")
distinct_claims=$(awk '{print $1, $2}' "$STATE/claims" | sort -u | wc -l)
# Finishes: one successful finish per delivery, by the holder of its last generation.
finishes=$(wc -l <"$STATE/finishes")
finished_ids=$(awk '$4 == "finished" {print $1}' "$STATE/finishes" | sort -u | wc -l)
# Generations: 1 for the 11 first-time deliveries; claim, reap, claim = 3 for the redelivered one.
IFS='|' read -r first_time redelivered_ok < <(q "
    SELECT count(*) FILTER (WHERE generation = 1 AND attempts = 1 AND id <> $HELD_ID),
           count(*) FILTER (WHERE generation = $NEW_GEN AND attempts = 2 AND id = $HELD_ID)
      FROM baton.deliveries WHERE tenant = '$TENANT'")
# The rows' own record: each result names the worker whose finish (at that generation) took it.
values=$(awk '{printf "%s(%s, %s, \x27%s\x27)", (NR > 1 ? ", " : ""), $1, $2, $3}' "$STATE/finishes")
matches=$(q "SELECT count(*) FROM (VALUES $values) AS f(id, generation, who)
               JOIN baton.deliveries d ON d.tenant = '$TENANT' AND d.id = f.id
                AND d.generation = f.generation AND d.result->>'by' = f.who")

say "claims handed out: $claims ($distinct_claims distinct (id, generation)); successful finishes: $finishes"
checks_ok=1
# check DESCRIPTION 1|0
check() {
    if (($2)); then ok "$1"; else
        printf '  %s✘ %s%s\n' "$R" "$1" "$N"
        checks_ok=0
    fi
}
check "12 deliveries enqueued" $((total == 12))
check "no delivery claimed twice under one generation ($claims claims = 12 + 1 redelivery)" \
    $((claims == 13 && distinct_claims == 13))
check "every delivery finished exactly once ($finishes finishes, by the holder of the last generation)" \
    $((finishes == 12 && finished_ids == 12 && matches == 12))
check "generations as expected ($first_time at generation 1; #$HELD_ID at generation $NEW_GEN, attempt 2)" \
    $((first_time == 11 && redelivered_ok == 1))
fenced=0
[[ $sqlstate == DU001 && $late_rc != 0 ]] && fenced=1
check "the dead holder's late finish was refused with DU001" $fenced
echo
if ((checks_ok == 1 && lost == 0 && finished == 12)); then
    printf '  %s%s%s deliveries, %s finished exactly once, %s lost%s\n' "$G" "$B" "$total" "$finished" "$lost" "$N"
else
    printf '  %s%s%s deliveries, %s finished, %s lost%s\n' "$R" "$B" "$total" "$finished" "$lost" "$N"
    exit 1
fi
