#!/usr/bin/env bash
# The documentation is true:   bash test/docs/run.sh [--write]
#
# Runs against the server in PGHOST/PGPORT/PGUSER (run-all.sh's cluster: preloaded,
# pg_baton installed, no background reaper). Checks:
#   sessions  each page of PAGES (getting started, functions, markers, workflows) documents
#             one psql session in its ```psql blocks (and ```sql session blocks that run
#             without showing output; test/docs/session.py says how they are marked): the
#             session runs, in order, in a fresh database of its own (baton_docs, dropped at
#             the end with the roles the page creates), and each block's output must equal
#             the page's (one check per block; a diff on mismatch). --write rewrites the
#             pages' outputs from the run instead.
#   links     every relative link of README.md and docs/ names a file that exists, and
#             its #anchor a heading of that file
#   paths     every docs/NAME.md named anywhere in the repository exists
#   current   no page of docs/ or README.md speaks of a session's work or of a version
#             gone by: no "this session", "Everything here is version", "this version
#             has no", "issue #N", "measured on <date>"
#
# Prints "N passed, N failed" last; exits non-zero when anything failed.
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
PY=/usr/bin/python3
export BATON_DOCS_DB=baton_docs
PAGES=(docs/guide/getting-started.md docs/guide/functions.md docs/guide/markers.md docs/guide/workflows.md)
WRITE=
[[ ${1:-} == --write ]] && WRITE=--write
PASS=0
FAIL=0

pass() { PASS=$((PASS + 1)); echo "ok   - $*"; }
fail() { FAIL=$((FAIL + 1)); echo "FAIL - $*"; }

# The roles a page creates (CREATE ROLE at its prompt), dropped before and after its run.
page_roles() { sed -n 's/^=# CREATE ROLE \([a-z_]*\);.*/\1/p' "$1"; }
drop_page() {
    psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $BATON_DOCS_DB" >/dev/null 2>&1
    local r
    for r in $(page_roles "$1"); do
        psql -X -q -d postgres -c "DROP ROLE IF EXISTS $r" >/dev/null 2>&1
    done
}

# --- sessions --------------------------------------------------------------------------
# The sessions call baton.reap() and baton.fire_schedules() themselves: a background
# reaper serving their database would change what they print.
reapers=$(psql -X -At -d postgres -c "SHOW baton.reaper_databases" 2>/dev/null)
if [[ $reapers == '*' || ",$reapers," == *",$BATON_DOCS_DB,"* ]]; then
    fail "the server runs no background reaper in $BATON_DOCS_DB (baton.reaper_databases = '$reapers')"
    PAGES=()
fi
for page in ${PAGES[@]+"${PAGES[@]}"}; do
    drop_page "$page"
    if ! psql -X -q -d postgres -c "CREATE DATABASE $BATON_DOCS_DB" >/dev/null; then
        fail "$page: create the database $BATON_DOCS_DB"
        continue
    fi
    out=$("$PY" test/docs/session.py check "$page" $WRITE 2>&1)
    echo "$out"
    PASS=$((PASS + $(grep -c '^ok   - ' <<<"$out")))
    FAIL=$((FAIL + $(grep -c '^FAIL - ' <<<"$out")))
    if ! grep -q '^ok   - \|^FAIL - ' <<<"$out"; then fail "$page: the session ran"; fi
    drop_page "$page"
done

# --- links and paths -------------------------------------------------------------------
while IFS= read -r line; do
    case $line in
        ok*) pass "${line#ok }" ;;
        *) fail "${line#bad }" ;;
    esac
done < <("$PY" test/docs/links.py)

# --- current ---------------------------------------------------------------------------
history=$(grep -rnP -i 'this session|Everything here is version|this version has no|\bissue #?\d+|measured (on|in) 20\d\d' \
              README.md docs --include='*.md' || true)
if [[ -z $history ]]; then
    pass "no page of docs/ or README.md tells its history"
else
    fail "no page of docs/ or README.md tells its history:"
    echo "$history" | sed 's/^/    /'
fi

echo "$PASS passed, $FAIL failed"
[[ $FAIL -eq 0 ]]
