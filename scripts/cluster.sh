# shellcheck shell=bash
# Throwaway PostgreSQL clusters for tests. Source this file, then:
#
#   cluster_start DIR PORT [extra postgresql.conf lines...]
#       initdb in DIR/data (as the postgres system user when called as root), a private
#       Unix socket directory DIR/sock, no TCP (listen_addresses=''), server log in
#       DIR/log; starts it (pg_ctl -w) and exports PGHOST, PGPORT, PGUSER=postgres,
#       PGDATABASE=postgres (and CLUSTER_DIR, CLUSTER_LOG).
#   cluster_stop DIR
#       stops that cluster, by its data directory only (pg_ctl -m fast), removes DIR.
#   cluster_free_port [FIRST]
#       prints a port, from FIRST (default 54329) on, that no visible server uses.
#
# DIR should be a fresh or empty directory under /tmp (e.g. from `mktemp -d`); the
# postgres user must be able to reach it. Other servers on the machine are never touched.
# Works as root (runs the server as postgres via runuser) or as any other user (runs
# the server as that user).

CLUSTER_MARKER=.pg_baton-throwaway-cluster

_cluster_log() { printf 'cluster: %s\n' "$*" >&2; }

# The server's bin directory (initdb, pg_ctl): from pg_config, else Debian's PG 15 path.
_cluster_bindir() {
    local dir
    dir=$("${PG_CONFIG:-pg_config}" --bindir 2>/dev/null) || dir=/usr/lib/postgresql/15/bin
    if [[ ! -x $dir/pg_ctl ]]; then
        _cluster_log "no pg_ctl in '$dir' (set PG_CONFIG)"
        return 1
    fi
    echo "$dir"
}

# Run a command as the server's OS user: postgres when we are root, else ourselves.
_cluster_as_owner() {
    if [[ $(id -u) -eq 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

_cluster_check_dir() {
    local dir=${1:-}
    if [[ -z $dir || $dir != /* ]]; then
        _cluster_log "DIR must be an absolute path (got '${dir}')"
        return 1
    fi
    case ${dir%/} in
        "" | /tmp | /var | /var/tmp | /home | /root | /usr | /etc)
            _cluster_log "refusing DIR '$dir'"
            return 1
            ;;
    esac
}

cluster_start() {
    if (($# < 2)); then
        _cluster_log "usage: cluster_start DIR PORT [postgresql.conf lines...]"
        return 2
    fi
    local dir=${1%/} port=$2
    shift 2
    _cluster_check_dir "$dir" || return 1
    if ! [[ $port =~ ^[0-9]+$ ]] || ((port < 1024 || port > 65535)); then
        _cluster_log "bad port '$port'"
        return 1
    fi
    if [[ -e $dir && -n $(ls -A "$dir" 2>/dev/null) ]]; then
        _cluster_log "$dir exists and is not empty"
        return 1
    fi

    local bindir
    bindir=$(_cluster_bindir) || return 1

    mkdir -p "$dir/sock" || return 1
    : >"$dir/$CLUSTER_MARKER"
    : >"$dir/log"
    chmod 0755 "$dir" "$dir/sock"
    if [[ $(id -u) -eq 0 ]]; then
        chown -R postgres:postgres "$dir" || return 1
    fi

    # cd: the server user may not be able to read the caller's working directory.
    if ! (cd "$dir" && _cluster_as_owner "$bindir/initdb" -D "$dir/data" -U postgres \
        --auth=trust --encoding=UTF8 --locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1); then
        _cluster_log "initdb failed:"
        cat "$dir/initdb.log" >&2
        return 1
    fi

    {
        echo
        echo "# --- throwaway test cluster (scripts/cluster.sh) ---"
        echo "listen_addresses = ''"
        echo "unix_socket_directories = '$dir/sock'"
        echo "port = $port"
        echo "fsync = on"
        echo "synchronous_commit = on"
        echo "max_connections = 200"
        echo "max_locks_per_transaction = 256"
        echo "shared_buffers = 256MB"
        echo "logging_collector = off"
        echo "log_line_prefix = '%m [%p] %q%a '"
        echo "lc_messages = 'C'"
        local line
        for line in "$@"; do
            printf '%s\n' "$line"
        done
    } >>"$dir/data/postgresql.conf"

    # CLUSTER_CORES=1: pg_ctl -c, a crashed server process leaves a core file in the data
    # directory (where the kernel writes one: kernel.core_pattern "core").
    if ! (cd "$dir" && _cluster_as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/log" \
        ${CLUSTER_CORES:+-c} -w -t 60 start >/dev/null); then
        _cluster_log "server did not start; last lines of $dir/log:"
        tail -n 40 "$dir/log" >&2
        return 1
    fi

    export PGHOST="$dir/sock" PGPORT="$port" PGUSER=postgres PGDATABASE=postgres
    export CLUSTER_DIR="$dir" CLUSTER_LOG="$dir/log"
    _cluster_log "started $dir (port $port, socket $PGHOST)"
}

cluster_stop() {
    if (($# < 1)); then
        _cluster_log "usage: cluster_stop DIR"
        return 2
    fi
    local dir=${1%/}
    _cluster_check_dir "$dir" || return 1
    [[ -d $dir ]] || return 0
    if [[ ! -e $dir/$CLUSTER_MARKER ]]; then
        _cluster_log "$dir was not made by cluster_start; leaving it alone"
        return 1
    fi

    local bindir rc=0 status_rc=0
    bindir=$(_cluster_bindir) || return 1
    if [[ -f $dir/data/postmaster.pid ]]; then
        (cd "$dir" && _cluster_as_owner "$bindir/pg_ctl" -D "$dir/data" status >/dev/null 2>&1) \
            || status_rc=$?
    fi
    # pg_ctl status: 0 running, 3 not running (a stale postmaster.pid after a crash).
    if [[ -f $dir/data/postmaster.pid ]] && ((status_rc != 3)); then
        if ! (cd "$dir" && _cluster_as_owner "$bindir/pg_ctl" -D "$dir/data" -m fast -w \
            -t 60 stop >/dev/null); then
            _cluster_log "fast stop failed; trying immediate"
            (cd "$dir" && _cluster_as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate -w \
                -t 30 stop >/dev/null) || rc=1
        fi
    fi
    if ((rc != 0)); then
        _cluster_log "could not stop the server in $dir; leaving the directory"
        return 1
    fi
    rm -rf -- "$dir"
    if [[ ${PGHOST:-} == "$dir/sock" ]]; then
        unset PGHOST PGPORT CLUSTER_DIR CLUSTER_LOG
    fi
    _cluster_log "stopped and removed $dir"
}

cluster_free_port() {
    local port=${1:-54329}
    while ((port < 65535)); do
        if [[ ! -e /tmp/.s.PGSQL.$port && ! -e /var/run/postgresql/.s.PGSQL.$port ]] \
            && ! ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then
            echo "$port"
            return 0
        fi
        port=$((port + 1))
    done
    return 1
}
