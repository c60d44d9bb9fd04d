#!/usr/bin/env python3
"""The summary of bench/limits.sh, from the raw data it wrote to OUT.

    python3 bench/limits.py OUT [--batch N] [--clients N] [--command CMD]

Reads OUT/runs.csv (one row a run: kind, variant, round, items, secs, transactions,
failed, deadlock failures, serialization failures, aborted clients, "deadlock detected"
lines in the server log, pending left, in the claim order left, the claim's and the
finish's mean latency in ms) and prints, per kind and variant, the median items/s over
the rounds, the median of the per-round ratios to plain, the statements' latencies, the
failures, and the goals. Standard library only.
"""
import argparse
import collections
import csv
import math
import os
import statistics
import sys

VARIANTS = ["plain", "uncounted", "keyed", "limited", "ordered", "paced"]
KINDS = ["cycle", "batch"]
GOAL = {"keyed": 0.9, "limited": 0.8, "ordered": 0.8, "paced": 0.8}
WHAT = {"plain": "no key (today's claim)", "uncounted": "no key, baton.count_events off", "keyed": "100 keys, no limit", "limited": "limit_key 1000, every key",
        "ordered": "ordered, every key", "paced": "rate_limit_key 1e6/s, every key"}


def med(values):
    values = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.median(values) if values else float("nan")


def fmt(v, spec="%.1f"):
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else spec % v


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--command", default="")
    args = ap.parse_args()
    path = os.path.join(args.out, "runs.csv")
    if not os.path.exists(path):
        print("no %s" % path, file=sys.stderr)
        return 2
    with open(path) as f:
        data = [r for r in csv.reader(f) if r]
    rate = collections.defaultdict(dict)  # (kind, variant) -> round -> items/s
    fails = collections.defaultdict(lambda: [0, 0, 0, 0, 0, 0])  # failed, deadlocks, serial, aborted, log, tx
    lat = collections.defaultdict(lambda: ([], [], []))  # (kind, variant) -> claim ms, finish ms, items a tx
    dry = []
    for kind, variant, rnd, items, secs, ntx, failed, dl, ser, ab, logdl, left, _ready, claim_ms, finish_ms in data:
        rate[(kind, variant)][int(rnd)] = int(items) / float(secs)
        lat[(kind, variant)][0].append(float(claim_ms))
        lat[(kind, variant)][1].append(float(finish_ms))
        lat[(kind, variant)][2].append(int(items) / max(1, int(ntx)))
        f = fails[(kind, variant)]
        for i, v in enumerate((failed, dl, ser, ab, logdl, ntx)):
            f[i] += int(v)
        if int(left) < args.clients * args.batch:
            dry.append("%s %s round %s" % (kind, variant, rnd))
    kinds = [k for k in KINDS if any(key[0] == k for key in rate)]
    variants = [v for v in VARIANTS if any(key[1] == v for key in rate)]
    goals = []
    print("-- claim/finish cycles, %d clients: items/s = median over rounds; ratio = median of the per-round"
          " ratios to plain" % args.clients)
    head = "   %-8s %-34s" % ("variant", "")
    for kind in kinds:
        label = "unbatched" if kind == "cycle" else "batched %d" % args.batch
        head += " %12s %7s %6s" % (label + " /s", "ratio", "rounds")
    print(head)
    for v in variants:
        line = "   %-8s %-34s" % (v, WHAT.get(v, ""))
        for kind in kinds:
            rv, rp = rate.get((kind, v), {}), rate.get((kind, "plain"), {})
            both = sorted(set(rv) & set(rp))
            rt = med([rv[r] / rp[r] for r in both if rp[r] > 0])
            line += " %12.0f %6sx %6d" % (med(list(rv.values())), fmt(rt, "%.2f"), len(rv))
            if v == "uncounted":
                label = "unbatched" if kind == "cycle" else "batched %d" % args.batch
                cost = 1 - 1 / rt if rt and not math.isnan(rt) else float("nan")
                goals.append(("the counters' cost (1 - plain / uncounted), %s <= 3%%" % label, cost,
                              None if math.isnan(cost) else cost <= 0.03))
            if v in GOAL:
                label = "unbatched" if kind == "cycle" else "batched %d" % args.batch
                goals.append(("%s / plain, %s >= %.1fx" % (v, label, GOAL[v]), rt,
                              None if math.isnan(rt) else rt >= GOAL[v]))
        print(line)
    print()
    print("-- where a cycle's time goes: pgbench -r mean latency of the claim and of the finish statement (ms, median"
          " over rounds; the claim's counts the empty ones), finished items per pgbench transaction")
    print("   %-6s %-8s %10s %10s %10s" % ("kind", "variant", "claim ms", "finish ms", "items/tx"))
    for kind in kinds:
        for v in variants:
            c, f, per = lat[(kind, v)]
            print("   %-6s %-8s %10s %10s %10s" % (kind, v, fmt(med(c), "%.3f"), fmt(med(f), "%.3f"),
                                                  fmt(med(per), "%.2f")))
    print()
    print("-- failures over all rounds (pgbench failed transactions: deadlock 40P01, serialization; aborted clients;"
          " 'deadlock detected' in the server log)")
    print("   %-6s %-8s %12s %8s %10s %8s %8s %10s" % ("kind", "variant", "transactions", "failed", "deadlocks",
                                                     "serial.", "aborted", "log dl."))
    for kind in kinds:
        for v in variants:
            f = fails[(kind, v)]
            print("   %-6s %-8s %12d %8d %10d %8d %8d %10d" % (kind, v, f[5], f[0], f[1], f[2], f[3], f[4]))
    print()
    if dry:
        print("-- WARNING: ran dry (fewer pending left than clients x batch; the rate is not the speed): "
              + ", ".join(dry))
        print()
    if goals:
        print("-- goals (the issue: no limit >= 0.9x today's claim, limits set >= 0.8x; ordered holds at most"
              " one claimable delivery a key)")
        for text, value, met in goals:
            state = "-" if met is None else ("met" if met else "NOT met")
            print("   %-44s %8s  %s" % (text, "x" + fmt(value, "%.2f"), state))
        print()
    if args.command:
        print("reproduce: PG_CONFIG=%s %s" % (os.environ.get("PG_CONFIG", "pg_config"), args.command))
    print("raw data: %s (summary again: python3 bench/limits.py %s)" % (args.out, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
