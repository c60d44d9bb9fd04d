"""Walking workflow runs: acquire a run, take its stages one by one with
baton.transition_stage, run each stage's handler, save its result or its failure, and
guard side effects with at-most-once markers.

    runner = Runner(conn, tenant, "user_deletion", owner="worker-7",
                    handlers={"gate_user": gate, "purge_db": purge})
    while runner.run_next():          # one run, as far as it can go now
        pass

A handler takes a Stage and returns the stage's result (a JSON object) or raises: the
stage is then failed (fail_stage), and transition_stage says when it may run again
(wait_until) or fails the run once its attempts are spent. A refusal the handler meets
(a BatonError, e.g. DuplicateKey) and a result that is not JSON fail the stage too;
LeaseLost and InDoubt do not: they end the walk (run_next returns on LeaseLost, raises
InDoubt). Any error raised out of run_next releases the run first (release_run), so that
it is not left leased. Inside a handler, stage.once(position, kind, action) runs action
at most once for this entry of the stage (claim_marker, complete_marker): across
crashes, owners and repeated handlers.

Everything is fenced by the run's generation: a runner that lost its lease (another
owner acquired the run after it expired) gets LeaseLost on its next call and drops the
run. Handlers should end within the lease; the runner renews it between stages.
"""

import datetime
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional

import psycopg

from pg_baton.errors import BatonError, LeaseLost, from_psycopg


class InDoubt(BatonError):
    """A marker claimed before by a call that did not complete it (its owner died): the
    action may or may not have run. Resolve it (docs/guide/markers.md) before going on. Raised
    by the runner itself, not by the server (no SQLSTATE)."""


@dataclass
class Stage:
    """The stage transition_stage handed out, and what its handler may use."""

    run_id: str
    stage_id: int
    name: str
    entry_seq: int
    inputs: Dict[str, Any]
    attempt: int
    runner: "Runner" = field(repr=False)

    def once(self, position: int, kind: str, action: Callable[[], Any], operation_id: Optional[str] = None) -> bool:
        """Runs action at most once for (this stage's entry, position): true when it ran
        now, false when it had run to its end before (done or failed). Raises InDoubt when
        an earlier claim never completed. A failing action marks the marker failed and
        raises."""
        r = self.runner
        if not r._one("SELECT baton.claim_marker(%s, %s, %s, %s, %s)",
                      (r.tenant, self.stage_id, position, kind, operation_id)):
            state = r._one("SELECT state FROM baton.marker(%s, %s, %s)", (r.tenant, self.stage_id, position))
            if state == "in_progress":
                raise InDoubt(f"marker {position} of stage {self.name} ({kind}) is in progress from an earlier claim",
                              detail="The action may or may not have run.",
                              hint="Check its effect, then baton.resolve_marker (docs/guide/markers.md).")
            return False
        try:
            action()
        except Exception as e:
            r._one("SELECT baton.complete_marker(%s, %s, %s, 'failed', %s)",
                   (r.tenant, self.stage_id, position, f"{type(e).__name__}: {e}"))
            raise
        r._one("SELECT baton.complete_marker(%s, %s, %s, 'done')", (r.tenant, self.stage_id, position))
        return True


class Runner:
    """Acquires the runs of one workflow of a tenant and walks their stages."""

    def __init__(self, conn: psycopg.Connection, tenant: str, workflow: str, owner: str,
                 handlers: Dict[str, Callable[[Stage], Optional[Dict[str, Any]]]], lease: float = 60.0,
                 retry_in: float = 30.0):
        if not conn.autocommit:
            raise ValueError("the runner's connection must be in autocommit mode (each call its own transaction)")
        self.conn = conn
        self.tenant = tenant
        self.workflow = workflow
        self.owner = owner
        self.handlers = handlers
        self.lease = datetime.timedelta(seconds=lease)
        self.retry_in = datetime.timedelta(seconds=retry_in)

    def _one(self, sql: str, params: tuple) -> Any:
        try:
            row = self.conn.execute(sql, params).fetchone()
        except psycopg.Error as e:
            raise from_psycopg(e) from None
        return None if row is None else row[0]

    def run_next(self) -> Optional[str]:
        """Acquires the next run that needs an owner and walks it as far as it goes now:
        its run id, or None when no run was acquired."""
        try:
            row = self.conn.execute("SELECT run_id, generation FROM baton.acquire_next_run(%s, %s, %s, %s)",
                                    (self.tenant, self.workflow, self.owner, self.lease)).fetchone()
        except psycopg.Error as e:
            raise from_psycopg(e) from None
        if row is None or row[0] is None:
            return None
        run_id, generation = str(row[0]), row[1]
        try:
            self.walk(run_id, generation)
        except LeaseLost:
            return run_id  # another owner has it now
        except BaseException:
            try:
                self._one("SELECT baton.release_run(%s, %s, %s)", (self.tenant, run_id, generation))
            except BatonError:
                pass  # the run is left to its lease; the first error is the one raised
            raise
        return run_id

    def walk(self, run_id: str, generation: int) -> str:
        """Takes the run's stages until it finishes or must wait: 'finished' or 'wait'.
        Releases the run when it waits, so that acquire_next_run offers it again later."""
        previous: Optional[int] = None
        while True:
            try:
                t = self.conn.execute(
                    "SELECT kind, stage_id, stage, entry_seq, inputs, attempt, wait_until, run_status"
                    "  FROM baton.transition_stage(%s, %s, %s, %s)",
                    (self.tenant, run_id, generation, previous)).fetchone()
            except psycopg.Error as e:
                raise from_psycopg(e) from None
            kind = t[0]
            if kind == "finished":
                return "finished"
            if kind == "wait":
                self._one("SELECT baton.release_run(%s, %s, %s)", (self.tenant, run_id, generation))
                return "wait"
            stage_id, name = t[1], t[2]
            handler = self.handlers.get(name)
            if handler is None:
                raise BatonError(f"no handler for stage {name} of workflow {self.workflow}")
            inputs = self._one("SELECT baton.start_stage(%s, %s, %s, %s)", (self.tenant, run_id, generation, stage_id))
            stage = Stage(run_id, stage_id, name, t[3], inputs or {}, (t[5] or 0) + 1, self)
            try:
                document = json.dumps(handler(stage) or {}, allow_nan=False)
            except (LeaseLost, InDoubt):
                raise
            except Exception as e:  # the handler raised (a refusal too), or its result is not JSON
                self._one("SELECT baton.fail_stage(%s, %s, %s, %s, %s, %s)",
                          (self.tenant, run_id, generation, stage_id, f"{type(e).__name__}: {e}", self.retry_in))
            else:
                self._one("SELECT baton.complete_stage(%s, %s, %s, %s, %s::pg_catalog.jsonb)",
                          (self.tenant, run_id, generation, stage_id, document))
            self._one("SELECT baton.renew_run(%s, %s, %s, %s)", (self.tenant, run_id, generation, self.lease))
            previous = stage_id
