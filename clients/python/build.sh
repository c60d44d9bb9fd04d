#!/usr/bin/env bash
# Builds the pg_baton wheel into OUT (default dist/ here), offline, with Debian's Python,
# setuptools and wheel:   bash clients/python/build.sh [OUT]
set -euo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
OUT=${1:-$HERE/dist}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/pg_baton-wheel.XXXXXX)
trap 'rm -rf -- "$WORK"' EXIT
# A copy, so that the build leaves nothing in the repository.
cp -r "$HERE/pyproject.toml" "$HERE/README.md" "$HERE/src" "$WORK/"
/usr/bin/python3 -m pip wheel --quiet --no-deps --no-build-isolation --no-index -w "$OUT" "$WORK"
ls "$OUT"/pg_baton-*.whl
