#!/usr/bin/env bash
# Builds the pg-baton npm tarball into OUT (default dist/ here), offline (npm pack needs
# no dependency installed):   bash clients/node/build.sh [OUT]
# Refuses when the package's version is not the extension's default_version
# (pg_baton.control). Prints the tarball's path.
set -euo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd -- "$HERE/../.." && pwd)
OUT=${1:-$HERE/dist}
mkdir -p "$OUT"
OUT=$(cd -- "$OUT" && pwd)
want=$(sed -n "s/^default_version *= *'\(.*\)'.*/\1/p" "$ROOT/pg_baton.control")
have=$(node -p 'require(process.argv[1]).version' "$HERE/package.json")
lock=$(node -p 'require(process.argv[1]).version' "$HERE/package-lock.json")
if [[ -z $want || $have != "$want" || $lock != "$want" ]]; then
    echo "build.sh: package.json ($have) and package-lock.json ($lock) must carry the extension's version ($want):" >&2
    echo "  cd clients/node && npm version --no-git-tag-version $want" >&2
    exit 1
fi
WORK=$(mktemp -d /tmp/pg-baton-npm.XXXXXX)
trap 'rm -rf -- "$WORK"' EXIT
# A copy, so that the build leaves nothing in the repository.
cp -r "$HERE/package.json" "$HERE/package-lock.json" "$HERE/README.md" "$HERE/src" "$WORK/"
(cd "$WORK" && npm pack --offline --silent --pack-destination "$OUT" >/dev/null)
ls "$OUT/pg-baton-$want.tgz"
