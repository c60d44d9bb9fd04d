#!/usr/bin/env python3
"""The summary of bench/fair.sh, from the raw data it wrote to OUT.

    python3 bench/fair.py OUT [--warm S] [--workers N] [--command CMD]

Reads OUT/waits.csv and throughput.csv (the noisy runs), shares.csv, weights.csv,
shares_window.csv and topup.csv (the shares run), cost.csv (the cost rounds), whichever
exist, and prints the tables and the goals. Standard library only.
"""
import argparse
import collections
import csv
import math
import os
import statistics
import sys

TAIL = 3.0  # light deliveries created in the last TAIL seconds of a run are left out
SHARE_WARM = 15.0
WINDOW = 60.0
STEP = 10.0


def rows(out, name):
    path = os.path.join(out, name)
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return []
    with open(path) as f:
        return [r for r in csv.reader(f) if r]


def nearest_rank(sorted_values, p):
    """The p-quantile by nearest rank: with fewer than 1/(1-p) samples, the largest."""
    if not sorted_values:
        return float("nan")
    k = max(1, math.ceil(p * len(sorted_values)))
    return sorted_values[k - 1]


def med(values):
    values = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.median(values) if values else float("nan")


def fmt(v, spec="%.1f"):
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else spec % v


def ratio(a, b):
    return a / b if b and not math.isnan(a) and not math.isnan(b) else float("nan")


# ---------------------------------------------------------------------------
# noisy: light tenants' waits and throughput
# ---------------------------------------------------------------------------
def noisy(out, goals):
    thr = rows(out, "throughput.csv")
    if not thr:
        return
    runs = {}  # (sys, noisy, round) -> dict
    for sys_, nz, rnd, start, end, light, heavy, calls, claims in thr:
        runs[(sys_, int(nz), int(rnd))] = {"start": float(start), "end": float(end), "light": int(light),
                                          "heavy": int(heavy), "waits": collections.defaultdict(list),
                                          "unclaimed": 0, "calls_per_claim": ratio(int(calls), int(claims))}
    for sys_, nz, rnd, tenant, created, wait in rows(out, "waits.csv"):
        run = runs.get((sys_, int(nz), int(rnd)))
        if run is None:
            continue
        created = float(created)
        if not run["start"] <= created < run["end"] - TAIL:
            continue
        if wait == "":
            run["unclaimed"] += 1
            w = (run["end"] - created) * 1000.0  # a lower bound: it waited at least this long
        else:
            w = float(wait)
        run["waits"][int(tenant)].append(w)
    for run in runs.values():
        per_tenant = [nearest_rank(sorted(v), 0.99) for v in run["waits"].values() if v]
        allw = sorted(w for v in run["waits"].values() for w in v)
        secs = run["end"] - run["start"]
        run.update({
            "p99_med": med(per_tenant), "p99_max": max(per_tenant) if per_tenant else float("nan"),
            "p50_all": nearest_rank(allw, 0.5), "p99_all": nearest_rank(allw, 0.99), "n": len(allw),
            "samples": med([len(v) for v in run["waits"].values()]),
            "rate": (run["light"] + run["heavy"]) / secs, "light_rate": run["light"] / secs,
            "heavy_rate": run["heavy"] / secs,
        })
    rounds = sorted({k[2] for k in runs})
    print("-- noisy neighbour: light tenants' wait from enqueue to claim (ms), claims a second; "
          "median over %d round(s)" % len(rounds))
    print("   %-26s %10s %10s %8s %8s %9s %8s %8s %8s %8s %9s" % (
        "pool, noisy tenant", "p99 median", "p99 max", "all p50", "all p99", "claims/s", "light/s",
        "noisy/s", "calls", "samples", "unclaimed"))
    print("   %-26s %10s %10s %8s %8s %9s %8s %8s %8s %8s" % ("", "(tenants)", "(tenants)", "", "", "", "", "",
                                                          "/claim", "/tenant"))
    names = {"fair": "claim_fair", "rr": "claim round-robin"}
    for sys_ in ("fair", "rr"):
        for nz in (1, 0):
            rs = [runs[k] for k in runs if k[0] == sys_ and k[1] == nz]
            if not rs:
                continue
            print("   %-26s %10s %10s %8s %8s %9s %8s %8s %8s %8s %9s" % (
                "%s, %s" % (names[sys_], "present" if nz else "absent"),
                fmt(med([r["p99_med"] for r in rs])), fmt(med([r["p99_max"] for r in rs])),
                fmt(med([r["p50_all"] for r in rs])), fmt(med([r["p99_all"] for r in rs])),
                fmt(med([r["rate"] for r in rs]), "%.0f"), fmt(med([r["light_rate"] for r in rs]), "%.0f"),
                fmt(med([r["heavy_rate"] for r in rs]), "%.0f"), fmt(med([r["calls_per_claim"] for r in rs]), "%.2f"),
                fmt(med([r["samples"] for r in rs]), "%.0f"), "%d" % sum(r["unclaimed"] for r in rs)))

    def rr(sys_a, nz_a, sys_b, nz_b, key):
        vals = []
        for r in rounds:
            a, b = runs.get((sys_a, nz_a, r)), runs.get((sys_b, nz_b, r))
            if a and b:
                vals.append(ratio(a[key], b[key]))
        return med(vals)

    print("   ratios (median of the per-round ratios):")
    lines = [
        ("claim_fair, light p99 (median over tenants), noisy present / absent", rr("fair", 1, "fair", 0, "p99_med")),
        ("claim_fair, light p99 (worst tenant), noisy present / absent", rr("fair", 1, "fair", 0, "p99_max")),
        ("claim_fair, all light waits' p99, noisy present / absent", rr("fair", 1, "fair", 0, "p99_all")),
        ("round-robin claim, light p99 (median over tenants), present / absent", rr("rr", 1, "rr", 0, "p99_med")),
        ("round-robin claim, light p99 (worst tenant), present / absent", rr("rr", 1, "rr", 0, "p99_max")),
        ("noisy present: light p99 (median over tenants), round-robin / claim_fair", rr("rr", 1, "fair", 1, "p99_med")),
        ("noisy present: claims a second, claim_fair / round-robin", rr("fair", 1, "rr", 1, "rate")),
        ("noisy absent: claims a second, claim_fair / round-robin", rr("fair", 0, "rr", 0, "rate")),
    ]
    for text, v in lines:
        print("     %-78s x%s" % (text, fmt(v, "%.2f")))
    goals.append(("noisy neighbour: claim_fair light p99 (median over tenants) present/absent <= 2x",
                  lines[0][1], lines[0][1] <= 2.0 if not math.isnan(lines[0][1]) else None))
    goals.append(("  (information) the same, worst tenant: its p99 is its longest wait, any stall's",
                  lines[1][1], None))
    print()


# ---------------------------------------------------------------------------
# shares: share of claims against weight, 60 s windows
# ---------------------------------------------------------------------------
def shares(out, goals, workers):
    win = rows(out, "shares_window.csv")
    counts = rows(out, "shares.csv")
    if not win or not counts:
        return
    t0, t1 = float(win[0][0]), float(win[0][1])
    weight = {int(t): int(w) for t, w in rows(out, "weights.csv")}
    total_w = sum(weight.values())
    by_sec = collections.defaultdict(dict)
    for t, sec, n in counts:
        by_sec[int(sec)][int(t)] = int(n)
    topups = rows(out, "topup.csv")
    dry = [(float(e), int(d)) for e, d, _, _ in topups]
    starts = []
    s = t0 + SHARE_WARM
    while s + WINDOW <= t1 + 0.5:
        starts.append(s)
        s += STEP
    if not starts:
        print("-- shares: the run is shorter than %.0f s of warm-up and one %.0f s window" % (SHARE_WARM, WINDOW))
        return
    devs = []  # (|dev|, dev, tenant, weight, window start)
    classes = collections.defaultdict(list)  # weight -> [share/expected per window]
    claims_per_window = []
    dry_in_windows = 0
    for s in starts:
        a, b = int(math.floor(s)), int(math.floor(s + WINDOW))
        c = collections.Counter()
        for sec in range(a, b):
            c.update(by_sec.get(sec, {}))
        total = sum(c.values())
        claims_per_window.append(total)
        if total == 0:
            continue
        dry_in_windows = max(dry_in_windows, sum(d for e, d in dry if a <= e < b))
        per_class = collections.Counter()
        for t, w in weight.items():
            got = c.get(t, 0)
            per_class[w] += got
            dev = (got / total) / (w / total_w) - 1.0
            devs.append((abs(dev), dev, t, w, s - t0))
        for w in set(weight.values()):
            class_w = sum(x for x in weight.values() if x == w)
            classes[w].append((per_class[w] / total) / (class_w / total_w))
    devs.sort()
    absd = [d[0] for d in devs]
    worst = devs[-1]
    per_window = med(claims_per_window)
    print("-- shares: %d tenants backlogged, weights %s (sum %d); %d windows of %.0f s (every %.0f s, after %.0f s)"
          % (len(weight), "/".join(str(w) for w in sorted(set(weight.values()))), total_w, len(starts), WINDOW,
             STEP, SHARE_WARM))
    print("   claims a window: median %.0f (%.0f/s); a weight-1 tenant's expected claims a window: %.1f;"
          " each worker's round over the tenants (%d items) lasts %.1f s, %.1f rounds a window"
          % (per_window, per_window / WINDOW, per_window / total_w, total_w,
             WINDOW * total_w * workers / per_window if per_window else float("nan"),
             per_window / workers / total_w if per_window else float("nan")))
    print("   |share / expected - 1| over (tenant, window): median %.2f%%, p90 %.2f%%, p99 %.2f%%, worst %.2f%%"
          " (tenant %d, weight %d, window at +%.0f s: %+.2f%%)"
          % (100 * nearest_rank(absd, 0.5), 100 * nearest_rank(absd, 0.9), 100 * nearest_rank(absd, 0.99),
             100 * worst[0], worst[2], worst[3], worst[4], 100 * worst[1]))
    within = sum(1 for d in absd if d <= 0.05) / len(absd)
    print("   (tenant, window) pairs within +-5%%: %.1f%%" % (100 * within))
    for w in sorted(classes):
        v = classes[w]
        print("   weight %d, the class's share / expected: min %.3f, max %.3f" % (w, min(v), max(v)))
    noisy_dev = [d[1] for d in devs if d[2] == 1]
    if noisy_dev:
        print("   the noisy tenant (weight %d, backlog x100): share / expected %.3f .. %.3f"
              % (weight.get(1, 0), 1 + min(noisy_dev), 1 + max(noisy_dev)))
    print("   top-ups: %d, of which %d found a tenant with nothing pending (most in one window: %d tenant-visits)"
          % (len(dry), sum(1 for _, d in dry if d > 0), dry_in_windows))
    goals.append(("shares: every backlogged tenant within +-5% of its weight, 60 s windows (worst |dev|)",
                  worst[0], worst[0] <= 0.05))
    print()


# ---------------------------------------------------------------------------
# cost
# ---------------------------------------------------------------------------
def cost(out, goals):
    data = rows(out, "cost.csv")
    if not data:
        return
    rate = collections.defaultdict(dict)  # (group, sys) -> round -> items/s
    for group, sys_, rnd, items, secs in data:
        rate[(group, sys_)][int(rnd)] = int(items) / float(secs)
    groups = []
    for group, _ in rate:
        if group not in groups:
            groups.append(group)
    print("-- cost: items a second (median over rounds), ratio = median of the per-round ratios")
    print("   %-16s %-10s %12s %-10s %12s %10s %8s" % ("backlog:kind", "A", "A items/s", "B", "B items/s", "A / B",
                                                     "rounds"))
    labels = {"one:cycle": "one tenant, unbatched", "one:batch": "one tenant, batched",
              "many:cycle": "many tenants, unbatched", "many:batch": "many tenants, batched",
              "tenants:cycle": "claim_fair unbatched, wide / narrow"}
    for group in groups:
        a, b = ("wide", "narrow") if group == "tenants:cycle" else ("fair", "claim")
        ra, rb = rate.get((group, a), {}), rate.get((group, b), {})
        both = sorted(set(ra) & set(rb))
        rt = med([ra[r] / rb[r] for r in both])
        print("   %-16s %-10s %12.0f %-10s %12.0f %9sx %8d" % (group, a if a != "fair" else "claim_fair",
              med(list(ra.values())), b, med(list(rb.values())), fmt(rt, "%.2f"), len(both)))
        if group == "tenants:cycle":
            goals.append(("cost: claim_fair, 100,000 tenants with work / 100: rate >= 1/1.2 (cost <= 1.2x)",
                          rt, rt >= 1 / 1.2 if not math.isnan(rt) else None))
        else:
            goals.append(("cost: claim_fair / claim, %s >= 0.9x" % labels.get(group, group),
                          rt, rt >= 0.9 if not math.isnan(rt) else None))
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--warm", type=float, default=10)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--command", default="")
    args = ap.parse_args()
    goals = []
    noisy(args.out, goals)
    shares(args.out, goals, args.workers)
    cost(args.out, goals)
    if goals:
        print("-- goals")
        for text, value, met in goals:
            state = "-" if met is None else ("met" if met else "NOT met")
            shown = fmt(value * 100, "%.2f%%") if text.startswith("shares") else "x" + fmt(value, "%.2f")
            print("   %-86s %9s  %s" % (text, shown, state))
        print()
    if args.command:
        print("reproduce: PG_CONFIG=%s %s" % (os.environ.get("PG_CONFIG", "pg_config"), args.command))
    print("raw data: %s (summary again: python3 bench/fair.py %s)" % (args.out, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
