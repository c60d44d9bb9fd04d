#!/usr/bin/env bash
# Builds the Debian package of pg_baton (postgresql-15-pg-baton) with Debian's own
# tooling, from a copy of the repository, and copies the built .deb files to OUTDIR.
#
#   bash test/package/build-deb.sh OUTDIR        (as root on Debian 12)
#
# The copy holds the files git knows of (tracked, and new ones that .gitignore does not
# exclude), so no build output of the working tree enters the package. It lives in a
# temporary directory under /tmp, removed on exit: dpkg-buildpackage writes its products
# beside the source directory, never into the repository. The build is a full one
# (source package and binaries): the orig tarball is the copy without debian/. Tests do
# not run at build time (DEB_BUILD_OPTIONS=nocheck; debian/rules skips them as well).
#
# Build dependencies missing from the machine are installed from Debian's archive:
# debhelper, and postgresql-server-dev-all at the installed postgresql-common's version
# (a newer one would upgrade postgresql-common). The server headers
# (postgresql-server-dev-15) must already match the installed server
# (scripts/install-deps.sh pins them); nothing here upgrades a server package.
#
# Prints the path of each .deb copied, one a line, as its last lines of output.
set -euo pipefail

log() { printf 'build-deb: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

(($# == 1)) || die "usage: build-deb.sh OUTDIR"
OUTDIR=$1
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
[[ $(id -u) -eq 0 ]] || die "must run as root (it installs build dependencies)"
mkdir -p "$OUTDIR"
OUTDIR=$(cd -- "$OUTDIR" && pwd)

installed_version() {
    local status
    status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)
    if [[ $status == "install ok installed" ]]; then
        dpkg-query -W -f='${Version}' "$1"
    fi
}

# --- build dependencies ------------------------------------------------------------------
need=()
[[ -n $(installed_version debhelper) ]] || need+=(debhelper)
[[ -n $(installed_version build-essential) ]] || need+=(build-essential)
if [[ -z $(installed_version postgresql-server-dev-all) ]]; then
    common_version=$(installed_version postgresql-common)
    [[ -n $common_version ]] || die "postgresql-common is not installed"
    need+=("postgresql-server-dev-all=$common_version")
fi
[[ -n $(installed_version postgresql-server-dev-15) ]] \
    || die "postgresql-server-dev-15 is missing (scripts/install-deps.sh installs it pinned to the server)"
if ((${#need[@]} > 0)); then
    log "installing build dependencies: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt_install=(apt-get install -y -q --no-install-recommends -o Dpkg::Use-Pty=0)
    # Refuse a transaction that would change an installed PostgreSQL package: a running
    # server would then fail to load its own libraries.
    changes=$("${apt_install[@]}" -s "${need[@]}" 2>/dev/null \
        | awk '/^Inst / && $3 ~ /^\[/ && $2 ~ /^(postgresql|libpq)/ {print $2, $3, $4}' || true)
    if [[ -z $changes ]] && ! "${apt_install[@]}" -s "${need[@]}" >/dev/null 2>&1; then
        apt-get update -qq
        changes=$("${apt_install[@]}" -s "${need[@]}" 2>/dev/null \
            | awk '/^Inst / && $3 ~ /^\[/ && $2 ~ /^(postgresql|libpq)/ {print $2, $3, $4}' || true)
    fi
    [[ -z $changes ]] || die "installing ${need[*]} would change installed PostgreSQL packages: $changes"
    "${apt_install[@]}" "${need[@]}" >&2
fi

# --- the copy --------------------------------------------------------------------------
upstream=$(sed -nE "s/^[[:space:]]*default_version[[:space:]]*=[[:space:]]*'([^']+)'.*/\1/p" \
    "$ROOT/pg_baton.control")
[[ -n $upstream ]] || die "no default_version in pg_baton.control"
source_name=$(sed -nE 's/^Source:[[:space:]]*//p' "$ROOT/debian/control")
[[ -n $source_name ]] || die "no Source: in debian/control"

WORK=$(mktemp -d /tmp/pg_baton-deb.XXXXXX)
trap 'rm -rf -- "$WORK"' EXIT
SRC=$WORK/$source_name-$upstream
mkdir -p "$SRC"
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # Tracked files and new ones not ignored; a tracked file deleted in the working tree
    # is left out.
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard \
        | while IFS= read -r -d '' f; do [[ -e $f || -L $f ]] && printf '%s\0' "$f"; done \
        | tar --null -T - -cf -) | tar -C "$SRC" -xf -
else
    # Not a git checkout: everything but the build outputs .gitignore names.
    tar -C "$ROOT" --exclude=.git --exclude-vcs-ignores -cf - . | tar -C "$SRC" -xf -
fi
[[ -f $SRC/debian/rules && -f $SRC/Makefile ]] || die "the copy has no debian/rules or Makefile"

# The orig tarball: the upstream tree, debian/ left out.
tar -C "$WORK" --exclude="$source_name-$upstream/debian" --owner=0 --group=0 --numeric-owner \
    -cJf "$WORK/${source_name}_$upstream.orig.tar.xz" "$source_name-$upstream"

# --- the build ---------------------------------------------------------------------------
log "dpkg-buildpackage in $SRC"
jobs=$(nproc 2>/dev/null || echo 2)
(cd "$SRC" && DEB_BUILD_OPTIONS="nocheck parallel=$jobs" dpkg-buildpackage -us -uc) >&2

shopt -s nullglob
debs=("$WORK"/*.deb)
((${#debs[@]} > 0)) || die "dpkg-buildpackage produced no .deb"
for deb in "${debs[@]}"; do
    cp -- "$deb" "$OUTDIR/"
done
log "built in $WORK (removed on exit)"
for deb in "${debs[@]}"; do
    echo "$OUTDIR/$(basename -- "$deb")"
done
