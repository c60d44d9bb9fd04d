#!/usr/bin/env bash
# A private, relocated copy of this machine's PostgreSQL 15 (binaries, share, headers)
# in DIR, so that several people can `make install` different builds of pg_baton on one
# machine without touching the system's copy. PostgreSQL finds its share and lib
# directories relative to its binaries, so the copy works where it lands.
#
#   bash scripts/private-pg.sh DIR      # prints the copy's pg_config; then, e.g.
#   export PG_CONFIG=$(bash scripts/private-pg.sh /tmp/me-pg)
#   make install && bash test/run-all.sh  (both honour PG_CONFIG)
set -euo pipefail
dir=${1:?usage: private-pg.sh DIR}
src_bin=$(dirname "$(readlink -f "$(command -v pg_config)")")
real=$("$src_bin/pg_config" --bindir 2>/dev/null || true)
[[ -x $real/pg_ctl ]] || real=/usr/lib/postgresql/15/bin
prefix=$(cd "$real/../../../.." && pwd)           # /usr for Debian's /usr/lib/postgresql/15/bin
ver=$(basename "$(cd "$real/.." && pwd)")        # 15
if [[ ! -x $dir/usr/lib/postgresql/$ver/bin/pg_config ]]; then
    mkdir -p "$dir/usr/lib/postgresql" "$dir/usr/share/postgresql" "$dir/usr/include"
    cp -a "$prefix/lib/postgresql/$ver" "$dir/usr/lib/postgresql/"
    cp -a "$prefix/share/postgresql/$ver" "$dir/usr/share/postgresql/"
    cp -a "$prefix/include/postgresql" "$dir/usr/include/"
    chmod -R a+rX "$dir"
fi
echo "$dir/usr/lib/postgresql/$ver/bin/pg_config"
