#!/usr/bin/env bash
# Build a PostgreSQL major from Debian's source package into a prefix of its own, once per
# machine; later calls print the prefix's pg_config at once. Run as root.
#
#   bash scripts/build-postgres.sh 18          # prints PREFIX/bin/pg_config
#   make PG_CONFIG=$(bash scripts/build-postgres.sh 18) install
#
# The prefix is $BATON_PG_ROOT/MAJOR (default /usr/local/pg_baton-postgres/MAJOR). The
# source comes from the first Debian suite that lists postgresql-MAJOR and serves its
# files (a deb-src line for sid, trixie and experimental is added when missing). The
# configuration is what pg_baton's tests need: OpenSSL (sslinfo-free, but pgcrypto and
# libpq's SCRAM use it), ICU (the default locale provider of 16+), readline for psql,
# and the contrib modules and test programs (amcheck, pg_stat_statements, test_decoding,
# pg_upgrade, pg_isolation_regress). Nothing else: no Perl, Python, LLVM or LDAP.
set -euo pipefail
major=${1:?usage: build-postgres.sh MAJOR}
root=${BATON_PG_ROOT:-/usr/local/pg_baton-postgres}
prefix=$root/$major
log() { printf 'build-postgres: %s\n' "$*" >&2; }

if [[ -x $prefix/bin/pg_config && -f $prefix/.complete ]]; then
    echo "$prefix/bin/pg_config"
    exit 0
fi

# --- build tools -------------------------------------------------------------------------
need=()
for p in bison flex dpkg-dev libicu-dev libreadline-dev zlib1g-dev libssl-dev pkg-config; do
    [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true) == "install ok installed" ]] \
        || need+=("$p")
done
if ((${#need[@]} > 0)); then
    log "installing ${need[*]}"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi

# --- the source package ------------------------------------------------------------------
srclist=/etc/apt/sources.list.d/pg_baton-src.sources
if [[ ! -f $srclist ]]; then
    log "adding deb-src lines for sid, trixie and experimental ($srclist)"
    cat >"$srclist" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: sid trixie experimental
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    apt-get update -qq >&2
fi

work=$(mktemp -d "/tmp/build-postgres-$major.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
cd "$work"
got=""
# Every version the archive lists, newest first; the first whose files download wins.
while read -r version; do
    [[ -n $version ]] || continue
    log "trying postgresql-$major=$version"
    if apt-get source -qq --download-only "postgresql-$major=$version" >&2 2>/dev/null; then
        got=$version
        break
    fi
    rm -f ./*.dsc ./*.tar.* ./*.diff.*
done < <(apt-cache showsrc "postgresql-$major" 2>/dev/null | awk '/^Version:/ {print $2}' | sort -rV -u)
[[ -n $got ]] || { log "no source of postgresql-$major can be downloaded here"; exit 2; }

# The upstream tarball alone: Debian's patches adapt paths to its own layout.
tarball=$(ls ./postgresql-"$major"_*.orig.tar.* | head -n 1)
tar -xf "$tarball"
src=$(find . -maxdepth 1 -type d -name "postgresql-$major*" | head -n 1)
cd "$src"
log "building $(basename "$src") ($got) into $prefix"
rm -rf "$prefix"
./configure --prefix="$prefix" --with-openssl --with-icu --with-readline \
    --without-perl --without-python --without-llvm >"$work/configure.log" 2>&1 \
    || { tail -n 40 "$work/configure.log" >&2; exit 1; }
jobs=$(nproc 2>/dev/null || echo 2)
make -s -j"$jobs" world-bin >"$work/make.log" 2>&1 || { tail -n 60 "$work/make.log" >&2; exit 1; }
make -s install-world-bin >"$work/install.log" 2>&1 || { tail -n 40 "$work/install.log" >&2; exit 1; }
# The isolation tester is not part of world-bin's install.
make -s -C src/test/isolation install >>"$work/install.log" 2>&1
chmod -R a+rX "$prefix"
echo "$got" >"$prefix/.complete"
echo "$prefix/bin/pg_config"
