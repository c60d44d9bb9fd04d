#!/usr/bin/env bash
# Model checks of pg_baton's protocols with spin (docs/internals/model.md): for each Promela model,
# spin -a generates the verifier, gcc compiles it (pan, exhaustive safety search:
# assertions and invalid end states), and pan runs it to the end.
#
#   bash test/model/run.sh            the checks below, at their default bounds (~20 s)
#   bash test/model/run.sh --large    also larger bounds (~1 min, up to ~1.5 GB of RAM)
#
# A model passes when pan explores its whole state space and finds no error. A broken
# variant (a -D flag that removes one protection of the C code) passes when pan DOES
# find an assertion violation: it shows that the checks can fail. The last line is
# "N passed, N failed", one count per check. Needs spin and gcc (scripts/install-deps.sh).
set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d /tmp/pg_baton-model.XXXXXX)
trap 'rm -rf -- "$WORK"' EXIT

# name  model  spin -D flags (comma-separated, - for none)  expect (ok | violation)
CHECKS=(
    "delivery          delivery.pml  -DN_ITEMS=2,-DN_WORKERS=3,-DMAX_ATTEMPTS=2  ok"
    "stages            stages.pml    -DN_WORKERS=2,-DMAX_ROWS=3,-DMAX_GEN=3      ok"
    "delivery_broken   delivery.pml  -DBROKEN_FINISH      violation"
    "stages_broken     stages.pml    -DBROKEN_TRANSITION  violation"
)
if [[ ${1:-} == --large ]]; then
    CHECKS+=(
        "delivery_large    delivery.pml  -DN_ITEMS=2,-DN_WORKERS=3,-DMAX_ATTEMPTS=3  ok"
        "delivery_3items   delivery.pml  -DN_ITEMS=3,-DN_WORKERS=2,-DMAX_ATTEMPTS=2  ok"
        "stages_rows4      stages.pml    -DN_WORKERS=2,-DMAX_ROWS=4,-DMAX_GEN=3      ok"
        "stages_gen4       stages.pml    -DN_WORKERS=2,-DMAX_ROWS=3,-DMAX_GEN=4      ok"
    )
fi
# pan's memory bound (MB) and search depth: a search cut short by either is a failure.
MEMLIM=${BATON_MODEL_MEMLIM:-3000}
DEPTH=${BATON_MODEL_DEPTH:-200000}

if ! command -v spin >/dev/null || ! command -v gcc >/dev/null; then
    echo "model: spin or gcc missing (scripts/install-deps.sh installs them)"
    echo "0 passed, ${#CHECKS[@]} failed"
    exit 1
fi

passed=0
failed=0
for check in "${CHECKS[@]}"; do
    read -r name model flags expect <<<"$check"
    dir=$WORK/$name
    mkdir -p "$dir"
    define=()
    [[ $flags == - ]] || IFS=, read -r -a define <<<"$flags"
    log=$dir/pan.log
    ok=0
    if (cd "$dir" && spin -a "${define[@]}" "$HERE/$model" >spin.log 2>&1 \
        && gcc -O2 -w -DSAFETY -DCOLLAPSE -DMEMLIM="$MEMLIM" -o pan pan.c >gcc.log 2>&1); then
        start=$SECONDS
        (cd "$dir" && ./pan -m"$DEPTH" >"$log" 2>&1)
        secs=$((SECONDS - start))
        states=$(grep -Eo '^ *[0-9]+ states, stored' "$log" | grep -Eo '[0-9]+' | head -n 1)
        trans=$(grep -Eo '^ *[0-9]+ transitions' "$log" | grep -Eo '[0-9]+' | head -n 1)
        errors=$(grep -Eo 'errors: [0-9]+' "$log" | grep -Eo '[0-9]+' | tail -n 1)
        depth=$(grep -Eo 'depth reached [0-9]+' "$log" | grep -Eo '[0-9]+' | tail -n 1)
        cut=$(grep -Ec 'max search depth too small|out of memory|memory limit' "$log")
        what="${states:-?} states, ${trans:-?} transitions, depth ${depth:-?}, ${secs}s"
        if [[ $expect == ok ]]; then
            if [[ $errors == 0 ]] && ((cut == 0)); then
                ok=1
                echo "model: PASS $name: no violation in the full state space ($what)"
            else
                echo "model: FAIL $name: errors ${errors:-?}${cut:+, search cut short} ($what)"
                grep -E 'violated|invalid end state|too small|memory' "$log" | head -n 5
                (cd "$dir" && [[ -f ${model}.trail ]] && spin -t -p -g "$HERE/$model" | tail -n 40)
            fi
        else
            if [[ ${errors:-0} -gt 0 ]] && grep -q 'assertion violated' "$log"; then
                ok=1
                echo "model: PASS $name: spin rejects it: $(grep -m1 'assertion violated' "$log" | sed 's/^pan:[0-9]*: //') ($what)"
            else
                echo "model: FAIL $name: the broken variant was NOT rejected ($what)"
            fi
        fi
    else
        echo "model: FAIL $name: spin -a or gcc failed"
        cat "$dir/spin.log" "$dir/gcc.log" 2>/dev/null | head -n 20
    fi
    if ((ok)); then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "$passed passed, $failed failed"
((failed == 0))
