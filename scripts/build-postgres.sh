#!/usr/bin/env bash
# Build a PostgreSQL major from Debian's source package into a prefix of its own, once per
# machine, with pg_repack for it; later calls print the prefix's pg_config at once. Run
# as root.
#
#   bash scripts/build-postgres.sh 18          # prints PREFIX/bin/pg_config
#   make PG_CONFIG=$(bash scripts/build-postgres.sh 18) install
#
# The prefix is $BATON_PG_ROOT/MAJOR (default /usr/local/pg_baton-postgres/MAJOR). The
# source comes from the newest version of postgresql-MAJOR that a Debian suite lists and
# serves (a deb-src line for sid, trixie and experimental is added when missing). The
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
for p in bison flex dpkg-dev curl libicu-dev libreadline-dev zlib1g-dev libssl-dev pkg-config; do
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

# fetch_orig PACKAGE: downloads the upstream tarball of the newest version of a Debian
# source package whose tarball the archive serves (its checksum checked) into the
# working directory and prints its name. Debian's own patches are not needed: they adapt
# paths to Debian's layout.
fetch_orig() {
    local pkg=$1 version uri file sum
    while read -r version; do
        [[ -n $version ]] || continue
        read -r uri file _ sum < <(cd "$work" && apt-get source --print-uris -qq "$pkg=$version" 2>/dev/null \
            | grep -E "_[^_]*\.orig\.tar\.[a-z0-9]+' " | head -n 1) || continue
        uri=${uri//\'/}
        log "downloading $file ($pkg $version)"
        if curl -fsS -o "$work/$file" "$uri" \
            && [[ $(sha256sum "$work/$file" | cut -d' ' -f1) == "${sum#SHA256:}" ]]; then
            echo "$file"
            return 0
        fi
        log "$file: not served or corrupt"
        rm -f "$work/$file"
    done < <(apt-cache showsrc "$pkg" 2>/dev/null | awk '/^Version:/ {print $2}' | sort -rV -u)
    return 1
}

cd "$work"
tarball=$(fetch_orig "postgresql-$major") \
    || { log "no source of postgresql-$major can be downloaded here"; exit 2; }
tar -xf "$tarball"
src=$(find . -maxdepth 1 -type d -name "postgresql-$major*" | head -n 1)
cd "$src"
log "building $(basename "$src") into $prefix"
rm -rf "$prefix"
./configure --prefix="$prefix" --with-openssl --with-icu --with-readline \
    --without-perl --without-python --without-llvm >"$work/configure.log" 2>&1 \
    || { tail -n 40 "$work/configure.log" >&2; exit 1; }
jobs=$(nproc 2>/dev/null || echo 2)
make -s -j"$jobs" world-bin >"$work/make.log" 2>&1 || { tail -n 60 "$work/make.log" >&2; exit 1; }
make -s install-world-bin >"$work/install.log" 2>&1 || { tail -n 40 "$work/install.log" >&2; exit 1; }
# The isolation tester is not part of world-bin's install.
make -s -C src/test/isolation install >>"$work/install.log" 2>&1

# pg_repack (test/tooling/maintenance.sh rewrites every table under load with it), from
# its own source package, for this server. Optional: the suite says when it is missing.
cd "$work"
if repack=$(fetch_orig pg-repack); then
    tar -xf "$repack"
    rdir=$(find . -maxdepth 1 -type d -name 'pg_repack*' | head -n 1)
    make -s -C "$rdir" PG_CONFIG="$prefix/bin/pg_config" -j"$jobs" >"$work/repack.log" 2>&1 \
        && make -s -C "$rdir" PG_CONFIG="$prefix/bin/pg_config" install >>"$work/repack.log" 2>&1 \
        || { log "pg_repack did not build for $major (left out):"; tail -n 20 "$work/repack.log" >&2; }
fi
chmod -R a+rX "$prefix"
basename "$src" >"$prefix/.complete"
echo "$prefix/bin/pg_config"
