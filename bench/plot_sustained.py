"""Plots of a bench/sustained.sh run, from the files of its output directory.

    python3 bench/plot_sustained.py OUT [--title TEXT] [--phases CLEAN_MIN,HOLD_MIN] [--into DIR]

Writes into DIR (default OUT) and prints the path of each file it writes:

    throughput.png  jobs a second in each 5 s window (OUT/windows.csv) over the minutes
                    since the first sample, with the median and 0.7 x the median of the
                    windows; the first window, which starts with the clients, is left
                    out, as sustained.sh leaves it out of its statistics. Not written
                    without OUT/windows.csv.
    tables.png      the dead rows (tables that had any) and the size with indexes of each
                    table of schema baton (OUT/tables.csv), with a marker at each sample
                    where the table's vacuum count (the reaper's vacuums) or autovacuum
                    count grew.

--phases CLEAN,HOLD (minutes, as sustained.sh's --clean and --hold) shades the minutes the
transaction of --mode hold was held open. --title defaults to the name of OUT. Needs
matplotlib (python3-matplotlib). Exit status 2, with one line on stderr, on an input
without samples.
"""

import argparse
import csv
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

HELD = "transaction held open"


def fail(msg):
    print("plot_sustained.py: " + msg, file=sys.stderr)
    sys.exit(2)


def read_tables(path):
    """{relname: [(epoch, live, dead, bytes, vacuums, autovacuums, updates)]}, the first epoch."""
    if not os.path.isfile(path):
        fail("no %s" % path)
    tables, first = {}, None
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if len(row) < 8:
                continue
            try:
                v = (int(row[0]),) + tuple(int(x) for x in row[2:8])
            except ValueError:
                continue
            tables.setdefault(row[1], []).append(v)
            first = v[0] if first is None else min(first, v[0])
    if not tables:
        fail("no samples in %s" % path)
    for samples in tables.values():
        samples.sort()
    return tables, first


def read_windows(path):
    """[(seconds, jobs a second)], or None without the file."""
    if not os.path.isfile(path):
        return None
    windows = []
    with open(path, newline="") as f:
        for row in csv.reader(f):
            try:
                windows.append((float(row[0]), float(row[1])))
            except (ValueError, IndexError):
                continue  # the header
    if len(windows) < 2:
        fail("no windows past the first in %s" % path)
    return windows


def shade(ax, phases, label):
    if phases:
        ax.axvspan(phases[0], phases[0] + phases[1], color="0.85", zorder=0, label=label)


def thousands(v, _):
    return "{:,}".format(int(round(v))) if abs(v - round(v)) < 1e-9 else "%g" % v


def plot_throughput(windows, phases, title, path):
    rates = [r for _, r in windows[1:]]
    med = statistics.median(rates)
    fig, ax = plt.subplots(figsize=(10, 5), dpi=100, layout="constrained")
    shade(ax, phases, HELD)
    ax.plot([s / 60 for s, _ in windows[1:]], rates, color="C0", lw=1.2, marker=".", ms=3,
            label="jobs/s, 5 s window")
    ax.axhline(med, color="k", lw=1, label="median %s" % thousands(round(med), None))
    ax.axhline(0.7 * med, color="k", lw=1, ls="--", label="0.7 \u00d7 median %s" % thousands(round(0.7 * med), None))
    ax.set_xlim(0, max(windows[-1][0] / 60, phases[0] + phases[1] if phases else 0))
    ax.set_ylim(0, max(rates) * 1.05 or 1)
    ax.yaxis.set_major_formatter(FuncFormatter(thousands))
    ax.set_xlabel("minutes since the first sample")
    ax.set_ylabel("jobs a second")
    ax.set_title(title + ": jobs a second, 5 s windows")
    ax.grid(True, color="0.9", lw=0.6)
    ax.set_axisbelow(True)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0, frameon=False)
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def plot_tables(tables, start, phases, title, path):
    # The tables that took part: some dead rows, or more than 1 MB at some point.
    names = sorted(n for n, s in tables.items() if max(v[2] for v in s) > 0 or max(v[3] for v in s) > 1048576)
    names = names or sorted(tables)
    colors = {n: "C%d" % (i % 10) for i, n in enumerate(names)}
    styles = {n: "-" if i < 10 else "--" for i, n in enumerate(names)}
    fig, (dead, size) = plt.subplots(2, 1, sharex=True, figsize=(10, 7.5), dpi=100)
    fig.subplots_adjust(left=0.08, right=0.76, top=0.95, bottom=0.075, hspace=0.08)
    for ax in (dead, size):
        shade(ax, phases, None)
        ax.grid(True, color="0.9", lw=0.6)
        ax.set_axisbelow(True)
    end = 0.0
    for n in names:
        s = tables[n]
        t = [(v[0] - start) / 60 for v in s]
        end = max(end, t[-1])
        size.plot(t, [v[3] / 1048576 for v in s], color=colors[n], ls=styles[n], lw=1.3)
        if max(v[2] for v in s) == 0:
            continue
        dead.plot(t, [v[2] for v in s], color=colors[n], ls=styles[n], lw=1.3)
        for i, marker, face in ((4, "v", colors[n]), (5, "o", "none")):
            hit = [j for j in range(1, len(s)) if s[j][i] > s[j - 1][i]]
            dead.plot([t[j] for j in hit], [s[j][2] for j in hit], ls="none", marker=marker, ms=4.5,
                      mfc=face, mec=colors[n], mew=1.2)
    dead.set_xlim(0, max(end, phases[0] + phases[1] if phases else 0) or 1)
    if not dead.lines:
        dead.set_ylim(0, 1000)
        dead.text(0.5, 0.5, "no dead rows", transform=dead.transAxes, ha="center", color="0.4")
    dead.set_ylim(bottom=-0.02 * dead.get_ylim()[1])  # markers at 0 stay in sight
    size.set_ylim(bottom=0)
    dead.yaxis.set_major_formatter(FuncFormatter(lambda v, _: thousands(v / 1000, None)))
    size.yaxis.set_major_formatter(FuncFormatter(thousands))
    dead.set_ylabel("dead rows, thousands")
    size.set_ylabel("size with indexes, MB")
    size.set_xlabel("minutes since the first sample")
    dead.set_title(title + ": tables of schema baton")
    handles = [Line2D([], [], color=colors[n], ls=styles[n], lw=1.3, label=n) for n in names]
    handles += [Line2D([], [], ls="none", marker="v", ms=4.5, mfc="0.4", mec="0.4", label="vacuum (reaper)"),
                Line2D([], [], ls="none", marker="o", ms=4.5, mfc="none", mec="0.4", mew=1.2, label="autovacuum")]
    if phases:
        handles.append(Patch(color="0.85", label=HELD))
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.77, 0.95), borderaxespad=0, frameon=False)
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description="Plots of a bench/sustained.sh run.")
    p.add_argument("out", metavar="OUT", help="sustained.sh's output directory")
    p.add_argument("--title", help="title of the plots (default: the name of OUT)")
    p.add_argument("--phases", metavar="CLEAN_MIN,HOLD_MIN", help="shade the held phase of --mode hold")
    p.add_argument("--into", metavar="DIR", help="where to write the plots (default: OUT)")
    a = p.parse_args()
    phases = None
    if a.phases:
        try:
            phases = tuple(float(x) for x in a.phases.split(","))
        except ValueError:
            phases = ()
        if len(phases) != 2 or min(phases) < 0:
            fail("--phases wants CLEAN_MIN,HOLD_MIN, not '%s'" % a.phases)
    title = a.title or os.path.basename(os.path.normpath(os.path.abspath(a.out)))
    into = a.into or a.out
    tables, start = read_tables(os.path.join(a.out, "tables.csv"))
    windows = read_windows(os.path.join(a.out, "windows.csv"))
    plt.rcParams.update({"font.size": 11})
    os.makedirs(into, exist_ok=True)
    if windows:
        plot_throughput(windows, phases, title, os.path.join(into, "throughput.png"))
        print(os.path.join(into, "throughput.png"))
    plot_tables(tables, start, phases, title, os.path.join(into, "tables.png"))
    print(os.path.join(into, "tables.png"))


if __name__ == "__main__":
    main()
