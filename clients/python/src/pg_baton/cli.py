"""baton: pg_baton from the command line.

    baton [--dsn DSN] [--json] COMMAND ...

The connection is libpq's (PGHOST, PGPORT, PGUSER, PGDATABASE, ...) or --dsn. Every
command is one or two calls of pg_baton's functions and views under the connected role:
a role that may not call one sees the refusal. Output is a table, or with --json one
JSON array of objects (health: the rows too).

Exit status: 0 done (health: every check ok); 1 health warns; 2 health is critical;
3 the server could not be reached or the connection was lost (one line on stderr);
4 pg_baton refused the call (its SQLSTATE, message, detail and hint on stderr);
64 the command line is wrong.
"""

import argparse
import datetime
import decimal
import json
import sys
import uuid
from typing import Any, List, Optional, Sequence, Tuple

import psycopg
from psycopg.types.json import Jsonb

from pg_baton.errors import BatonError, from_psycopg

EXIT_WARN, EXIT_CRITICAL, EXIT_CONNECTION, EXIT_REFUSED, EXIT_USAGE = 1, 2, 3, 4, 64


class Usage(Exception):
    """A command line that cannot run: said on stderr, exit 64."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own exit status (2) is "critical" here
        self.print_usage(sys.stderr)
        print(f"baton: {message}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


# --- what each command runs ----------------------------------------------------------------
# Each returns (columns, rows) and, for health, the exit status.

def q(conn: psycopg.Connection, sql: str, params: Sequence[Any] = ()) -> Tuple[List[str], List[tuple]]:
    cur = conn.execute(sql, params)
    columns = [d.name for d in cur.description] if cur.description else []
    return columns, cur.fetchall() if cur.description else []


def where(conditions: List[Tuple[str, Any]]) -> Tuple[str, list]:
    """A WHERE clause of the conditions whose value is given."""
    parts, params = [], []
    for sql, value in conditions:
        if value is not None:
            parts.append(sql)
            params.append(value)
    return (" WHERE " + " AND ".join(parts)) if parts else "", params


def cmd_tenants(conn, a):
    return q(conn, "SELECT tenant, state, state_changed_at FROM baton.tenants ORDER BY tenant")


def cmd_targets(conn, a):
    w, p = where([("tenant = %s", a.tenant)])
    return q(conn, "SELECT tenant, target, role, weight, paused, paused_at FROM baton.targets" + w
             + " ORDER BY tenant, target", p)


def per_target(view: str, columns: str):
    """The command that lists a view of rows per tenant and target, --tenant and --target
    narrowing it."""
    def cmd(conn, a):
        w, p = where([("tenant = %s", a.tenant), ("target = %s", a.target)])
        return q(conn, f"SELECT tenant, target, {columns} FROM baton.{view}{w} ORDER BY tenant, target", p)
    return cmd


cmd_stats = per_target("delivery_stats", "pending, claimed, finished, failed, cancelled, expired_leases, "
                       "oldest_pending_age")
cmd_counters = per_target("delivery_counters", "enqueued, claimed, finished, failed, retried, cancelled, reaped, "
                          "redriven")


def cmd_deliveries(conn, a):
    w, p = where([("tenant = %s", a.tenant), ("target = %s", a.target), ("status = %s", a.status)])
    return q(conn, "SELECT tenant, id, target, status, attempts, generation, run_after, lease_until, dedup_key,"
             " last_error FROM baton.deliveries" + w + " ORDER BY tenant, id DESC LIMIT %s", p + [a.limit])


def cmd_delivery(conn, a):
    return q(conn, "SELECT * FROM baton.delivery(%s, %s)", (a.tenant, a.id))


def cmd_runs(conn, a):
    w, p = where([("tenant = %s", a.tenant)])
    return q(conn, "SELECT tenant, workflow, submitted, approved, running, completed, failed, cancelled,"
             " waiting_retry, stuck FROM baton.run_stats" + w + " ORDER BY tenant, workflow", p)


def cmd_run(conn, a):
    return q(conn, "SELECT * FROM baton.run(%s, %s)", (a.tenant, a.run_id))


def cmd_schedules(conn, a):
    w, p = where([("tenant = %s", a.tenant)])
    return q(conn, "SELECT tenant, name, target, spec, time_zone, next_fire_at, last_fired_at, last_delivery_id"
             " FROM baton.schedules" + w + " ORDER BY tenant, name", p)


def json_arg(text: Optional[str], name: str) -> Any:
    if text is None:
        return {}
    try:
        return json.loads(text)
    except ValueError as e:
        raise Usage(f"--{name} is not JSON: {e}") from None


def cmd_enqueue(conn, a):
    args = [a.tenant, a.target, a.dedup_key, Jsonb(json_arg(a.payload, "payload")),
            Jsonb(json_arg(a.binding, "binding")), a.run_after, a.priority, a.max_attempts]
    if a.key is None:
        return q(conn, "SELECT baton.enqueue(%s, %s, %s, %s, %s, %s, %s, %s) AS id", args)
    return q(conn, "SELECT baton.enqueue_keyed(%s, %s, %s, %s, %s, %s, %s, %s, %s) AS id",
             args[:3] + [a.key] + args[3:])


def cmd_cancel(conn, a):
    return q(conn, "SELECT baton.cancel_delivery(%s, %s, %s) AS status", (a.tenant, a.id, a.reason))


def cmd_redrive(conn, a):
    ids = None
    if a.ids:
        try:
            ids = [int(x) for x in a.ids.split(",")]
        except ValueError:
            raise Usage("--ids is a comma-separated list of delivery ids") from None
    return q(conn, "SELECT baton.redrive(%s, %s, %s, %s) AS redriven", (a.tenant, a.target, ids, a.max_rows))


def cmd_retry(conn, a):
    return q(conn, "SELECT baton.retry(%s, %s, %s, %s, pg_catalog.make_interval(secs => %s)) AS status",
             (a.tenant, a.id, a.generation, a.error, a.delay))


def cmd_pause(conn, a):
    q(conn, "SELECT baton.pause(%s, %s)", (a.tenant, a.target))
    return cmd_targets_of(conn, a)


def cmd_resume(conn, a):
    q(conn, "SELECT baton.resume(%s, %s)", (a.tenant, a.target))
    return cmd_targets_of(conn, a)


def cmd_targets_of(conn, a):
    return q(conn, "SELECT tenant, target, paused, paused_at FROM baton.targets WHERE tenant = %s AND target = %s",
             (a.tenant, a.target))


def cmd_health(conn, a):
    columns, rows = q(conn, "SELECT name, status, value, detail, hint FROM baton.health")
    statuses = {r[1] for r in rows}
    code = EXIT_CRITICAL if "critical" in statuses else EXIT_WARN if "warn" in statuses else 0
    return columns, rows, code


# --- output ----------------------------------------------------------------------------------

def plain(value: Any) -> Any:
    """A value as JSON has it."""
    if value is None or isinstance(value, (bool, int, float, str, list, dict)):
        return value
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    return str(value)


def text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def show(columns: List[str], rows: List[tuple], as_json: bool) -> None:
    if as_json:
        print(json.dumps([{c: plain(v) for c, v in zip(columns, r)} for r in rows], indent=2))
        return
    cells = [[text(v) for v in r] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip())
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())
    print(f"({len(rows)} row{'' if len(rows) == 1 else 's'})")


def refused(e: BatonError) -> int:
    print(f"baton: ERROR {e.sqlstate}: {e.message}", file=sys.stderr)
    if e.detail:
        print(f"DETAIL: {e.detail}", file=sys.stderr)
    if e.hint:
        print(f"HINT: {e.hint}", file=sys.stderr)
    return EXIT_REFUSED


# --- the command line -------------------------------------------------------------------------

def tenant_id(value: str) -> str:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a tenant uuid: {value!r}") from None


def parser() -> Parser:
    p = Parser(prog="baton", description="pg_baton from the command line (see pg_baton/cli.py for exit statuses)")
    p.add_argument("--dsn", default="", help="a conninfo string or postgresql:// URL (default: libpq's PG* variables)")
    p.add_argument("--json", action="store_true", help="print a JSON array of objects instead of a table")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)

    def command(name: str, fn, help: str) -> Parser:
        c = sub.add_parser(name, help=help)
        c.set_defaults(fn=fn)
        return c

    command("tenants", cmd_tenants, "the tenants and their states (the extension's owner)")
    c = command("targets", cmd_targets, "the bound targets: role, weight, paused")
    c.add_argument("--tenant", type=tenant_id)
    for name, fn, help in (("stats", cmd_stats, "deliveries by status, per tenant and target (delivery_stats)"),
                           ("counters", cmd_counters, "the monotonic counters (delivery_counters)")):
        c = command(name, fn, help)
        c.add_argument("--tenant", type=tenant_id)
        c.add_argument("--target")
    c = command("deliveries", cmd_deliveries, "the newest deliveries (the extension's owner)")
    c.add_argument("--tenant", type=tenant_id)
    c.add_argument("--target")
    c.add_argument("--status", choices=["pending", "claimed", "finished", "failed", "cancelled"])
    c.add_argument("--limit", type=int, default=50)
    c = command("delivery", cmd_delivery, "one delivery (baton.delivery)")
    c.add_argument("tenant", type=tenant_id)
    c.add_argument("id", type=int)
    c = command("runs", cmd_runs, "runs by status, per tenant and workflow (run_stats)")
    c.add_argument("--tenant", type=tenant_id)
    c = command("run", cmd_run, "one run (baton.run)")
    c.add_argument("tenant", type=tenant_id)
    c.add_argument("run_id", type=tenant_id)
    c = command("schedules", cmd_schedules, "the schedules, their next and last fire")
    c.add_argument("--tenant", type=tenant_id)
    c = command("enqueue", cmd_enqueue, "enqueue a delivery; prints its id")
    c.add_argument("tenant", type=tenant_id)
    c.add_argument("target")
    c.add_argument("dedup_key")
    c.add_argument("--payload")
    c.add_argument("--binding")
    c.add_argument("--run-after", dest="run_after")
    c.add_argument("--priority", type=int, default=0)
    c.add_argument("--max-attempts", dest="max_attempts", type=int, default=3)
    c.add_argument("--key", help="the delivery's key (baton.enqueue_keyed)")
    c = command("cancel", cmd_cancel, "cancel a delivery")
    c.add_argument("tenant", type=tenant_id)
    c.add_argument("id", type=int)
    c.add_argument("--reason")
    c = command("redrive", cmd_redrive, "send failed and cancelled deliveries back to work")
    c.add_argument("tenant", type=tenant_id)
    c.add_argument("target")
    c.add_argument("--ids", help="comma-separated ids (default: the oldest settled, up to --max-rows)")
    c.add_argument("--max-rows", dest="max_rows", type=int, default=1000)
    c = command("retry", cmd_retry, "give a held lease back for a retry (the holder's generation)")
    c.add_argument("tenant", type=tenant_id)
    c.add_argument("id", type=int)
    c.add_argument("generation", type=int)
    c.add_argument("--error", default="retried from the command line")
    c.add_argument("--delay", type=float, default=0.0, help="seconds before it is claimable again")
    for name, fn, help in (("pause", cmd_pause, "pause a target of a tenant"),
                           ("resume", cmd_resume, "resume a paused target of a tenant")):
        c = command(name, fn, help)
        c.add_argument("tenant", type=tenant_id)
        c.add_argument("target")
    command("health", cmd_health, "baton.health; exit 0 ok, 1 warn, 2 critical")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    try:
        conn = psycopg.connect(args.dsn, autocommit=True, application_name="baton-cli")
    except psycopg.OperationalError as e:
        print(f"baton: cannot connect: {str(e).strip().splitlines()[0]}", file=sys.stderr)
        return EXIT_CONNECTION
    try:
        with conn:
            result = args.fn(conn, args)
    except Usage as e:
        print(f"baton: {e}", file=sys.stderr)
        return EXIT_USAGE
    except psycopg.OperationalError as e:
        if conn.broken:
            print(f"baton: the connection was lost: {str(e).strip().splitlines()[0]}", file=sys.stderr)
            return EXIT_CONNECTION
        return refused(from_psycopg(e))
    except psycopg.Error as e:
        return refused(from_psycopg(e))
    columns, rows = result[0], result[1]
    show(columns, rows, args.json)
    return result[2] if len(result) > 2 else 0


if __name__ == "__main__":
    sys.exit(main())
