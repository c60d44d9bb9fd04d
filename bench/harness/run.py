#!/usr/bin/env python3
"""Drives the job-queue benchmark harness natively, with pg_baton registered beside its
own adapters. Started by bench/harness.sh, which extracts the harness, prepares the
adapters and puts the `docker` stand-in (bench/harness/bin/docker) on PATH.

What this file changes in the harness, at run time only (its files stay as extracted):
  - adapters.PG_PORT: the port of the stand-in cluster;
  - adapters.ADAPTERS["pgbaton"]: bench/harness/pgbaton-bench, launched as a native
    process (python3 main.py) in place of `docker run`;
  - orchestrator.RESULTS_ROOT: the results directory given on the command line;
  - versions._CAPTURE["pgbaton"]: the commit of this repository, for manifest.json.
It calls orchestrator.drive() with the phases of the chosen scenario, the durations scaled
(the harness' CLI front end needs pydantic 2, which the machine does not have; drive() is
what that front end calls after validating).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

# Short lengths by default: each phase of a harness scenario is multiplied by this (at
# least 10 s a phase). --scale 1 runs the harness' own lengths.
SHORT_SCALE = {"chaos": 0.5, "long": 1 / 60}
# The two throughput/latency cells are ours (warmup then one clean phase); at --scale 1
# they are 10 min of warmup and 60 min clean, as the harness' clean phases are.
OWN_SCENARIOS = {
    "peak": ["warmup=warmup:10m", "clean_1=clean:60m"],
    "clean": ["warmup=warmup:10m", "clean_1=clean:60m"],
}
OWN_SHORT = {"peak": ["warmup=warmup:20s", "clean_1=clean:60s"],
             "clean": ["warmup=warmup:20s", "clean_1=clean:60s"]}


def scaled_specs(scenario: str, scale: float | None, phases_mod) -> list[str]:
    if scenario in OWN_SCENARIOS:
        if scale is None:
            return OWN_SHORT[scenario]
        specs = OWN_SCENARIOS[scenario]
    else:
        specs = phases_mod.SCENARIOS[scenario]
        if scale is None:
            scale = SHORT_SCALE["chaos" if scenario.startswith("chaos_") else "long"]
    out = []
    for spec in specs:
        phase = phases_mod.parse_phase_spec(spec)
        seconds = max(10, round(phase.duration_s * scale))
        head = spec.rsplit(":", 1)[0]
        out.append(f"{head}:{seconds}s")
    return out


def git_revision() -> dict:
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True).stdout.strip()

    return {"source": "git", "git_sha": git("rev-parse", "HEAD"), "git_short": git("rev-parse", "--short", "HEAD"),
            "git_branch": git("rev-parse", "--abbrev-ref", "HEAD"), "git_dirty": bool(git("status", "--porcelain"))}


# What is left in each system's queue when its cell ends (its adapter stopped, before the
# cluster is dropped): the ground truth beside the harness' rate-based jobs_lost.
CENSUS_SQL = {
    "pgbaton_bench": "SELECT status, count(*) FROM baton.deliveries GROUP BY status ORDER BY status",
    "pgboss_bench": "SELECT state::text, count(*) FROM pgboss.job GROUP BY state ORDER BY state",
}


def census(port: int) -> dict:
    import psycopg

    out = {}
    for db, query in CENSUS_SQL.items():
        try:
            with psycopg.connect(f"postgres://bench@127.0.0.1:{port}/{db}", connect_timeout=3) as conn:
                out[db] = {status: n for status, n in conn.execute(query).fetchall()}
        except psycopg.Error:
            pass
    return out


def headline(run_dir: Path, systems: list[str], censuses: list) -> dict:
    """The figures the runner prints: per system, from raw.csv and summary.json."""
    rows = list(csv.DictReader((run_dir / "raw.csv").open()))
    summary = json.loads((run_dir / "summary.json").read_text())
    out: dict = {}
    for system in systems:
        mine = [r for r in rows if r["system"] == system]
        measured = [r for r in mine if r["phase_type"] != "warmup"]

        def series(metric: str, kind: str = "adapter", rows=measured) -> list[float]:
            return [float(r["value"]) for r in rows if r["metric"] == metric and r["subject_kind"] == kind]

        thr = series("completion_rate")
        enq = series("enqueue_rate")
        entry = {
            "completion_rate_per_window": ({"min": min(thr), "median": statistics.median(thr), "max": max(thr),
                                            "windows": len(thr)} if thr else None),
            "enqueue_rate_median": statistics.median(enq) if enq else None,
        }
        clean = [r for r in measured if r["phase_type"] == "clean"]
        for m in ("claim_p50_ms", "claim_p95_ms", "claim_p99_ms"):
            vals = series(m, rows=clean)
            entry[m + "_median_of_windows"] = statistics.median(vals) if vals else None
        depth = series("queue_depth")
        entry["queue_depth_median"] = statistics.median(depth) if depth else None
        dead: dict[str, float] = {}
        for r in mine:
            if r["metric"] == "n_dead_tup":
                dead[r["subject"]] = max(dead.get(r["subject"], 0.0), float(r["value"]))
        entry["n_dead_tup_peak"] = dead
        per_phase: dict = {}
        for r in mine:
            if r["subject_kind"] not in ("adapter", "table"):
                continue
            block = per_phase.setdefault(r["phase_label"], {})
            block.setdefault(r["metric"] if r["subject_kind"] == "adapter" else f"{r['metric']}:{r['subject']}",
                             []).append(float(r["value"]))
        entry["phases"] = {
            label: {
                **{m: round(statistics.median(v[m]), 2) for m in ("completion_rate", "claim_p50_ms", "claim_p95_ms",
                                                                   "claim_p99_ms", "queue_depth") if m in v},
                "n_dead_tup_max": {k.split(":", 1)[1]: max(vals) for k, vals in v.items()
                                   if k.startswith("n_dead_tup:")},
            }
            for label, v in per_phase.items()
        }
        sys_summary = (summary.get("systems") or {}).get(system) or {}
        chaos = {}
        for label, block in (sys_summary.get("phases") or {}).items():
            if isinstance(block, dict) and "jobs_lost" in block:
                chaos[label] = {k: block.get(k) for k in ("jobs_enqueued", "jobs_completed", "jobs_lost",
                                                         "chaos_recovery_time_s")}
        if chaos:
            entry["chaos"] = chaos
        lost = series("lease_lost_total", rows=mine)
        if lost:
            entry["lease_lost_total_last"] = lost[-1]
        out[system] = entry
    out["census_at_cell_end"] = censuses
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--summarize", metavar="RUN_DIR", help="print the headline figures of a finished run")
    ap.add_argument("--harness", help="the extracted harness (its bench_harness/ package)")
    ap.add_argument("--results")
    ap.add_argument("--port", type=int)
    ap.add_argument("--scenario",
                    help="peak | clean | a scenario of the harness (idle_in_tx_saturation, active_readers, "
                         "chaos_pg_backend_kill, chaos_postgres_restart, chaos_repeated_kills, ...)")
    ap.add_argument("--systems", default="pgbaton,pgboss")
    ap.add_argument("--scale", type=float, default=None, help="phase lengths x this; 1 = the full lengths")
    ap.add_argument("--rate", type=int, default=750, help="fixed offered load, jobs/s")
    ap.add_argument("--depth", type=int, default=4000, help="queue depth kept by the peak scenario")
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--sample-every", type=int, default=5)
    args = ap.parse_args()
    if args.summarize:
        run_dir = Path(args.summarize)
        systems = json.loads((run_dir / "manifest.json").read_text()).get("systems") or []
        old = json.loads((run_dir / "headline.json").read_text()) if (run_dir / "headline.json").exists() else {}
        print(json.dumps(headline(run_dir, systems, old.get("census_at_cell_end", [])), indent=2))
        return 0
    if not (args.harness and args.results and args.port and args.scenario):
        ap.error("--harness, --results, --port and --scenario are required to run")

    sys.path.insert(0, args.harness)
    from bench_harness import adapters, orchestrator, phases, versions  # noqa: E402

    adapters.PG_PORT = args.port
    orchestrator.RESULTS_ROOT = Path(args.results)

    def launch_pgbaton(manifest, overrides):
        return adapters.LaunchSpec(argv=[sys.executable, str(HERE / "pgbaton-bench" / "main.py")],
                                   env=adapters._base_env(manifest, overrides))

    adapters.ADAPTERS["pgbaton"] = adapters.AdapterEntry(
        bench_dir=HERE / "pgbaton-bench", builder=lambda skip: None, launcher=launch_pgbaton)
    versions._CAPTURE["pgbaton"] = git_revision
    censuses: list = []
    stop_postgres = orchestrator.stop_postgres

    def stop_postgres_after_census(pg_image: str) -> None:
        found = census(args.port)
        if found:
            censuses.append(found)
            print(f"[harness.sh] census at cell end: {found}", file=sys.stderr)
        stop_postgres(pg_image)

    orchestrator.stop_postgres = stop_postgres_after_census

    specs = scaled_specs(args.scenario, args.scale, phases)
    phase_list = phases.resolve_scenario(None, specs)
    systems = [s for s in args.systems.split(",") if s]
    peak = args.scenario == "peak"
    print(f"[harness.sh] scenario {args.scenario}: {' '.join(specs)}; systems {systems}", file=sys.stderr)
    run_dir = orchestrator.drive(
        systems=systems,
        scenario=args.scenario,
        phases=phase_list,
        pg_image="native-postgres (bench/harness/bin/docker)",
        fast=False,
        skip_build=True,
        sample_every_s=args.sample_every,
        producer_rate=args.rate,
        producer_mode="depth-target" if peak else "fixed",
        target_depth=args.depth,
        worker_count=args.workers,
        high_load_multiplier=1.5,
        awa_completion_batch_size=None,
        replicas=1,
        cli_args=list(sys.argv),
    )
    figures = headline(run_dir, systems, censuses)
    (run_dir / "headline.json").write_text(json.dumps(figures, indent=2))
    print(json.dumps({"run_dir": str(run_dir), "figures": figures}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
