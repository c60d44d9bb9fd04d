"""pg_baton's refusals as Python exceptions, one class per SQLSTATE of the contract.

The classes of DU001...DU009 bear the names of the contract's table of errors, but two:
TenantNotWritable is tenant_fenced (DU002, also importable as TenantFenced) and
DuplicateKey is dedup_conflict (DU009, also DedupConflict).

Every pg_baton function refuses with ereport(ERROR) and a SQLSTATE; psycopg raises
psycopg.Error with .sqlstate, .diag (message_primary, message_detail, message_hint).
from_psycopg() turns such an error into the class of its SQLSTATE, keeping the parts.
"""

from typing import Dict, Optional, Type

import psycopg


class BatonError(Exception):
    """A refusal of a pg_baton function: its SQLSTATE, message, detail and hint."""

    sqlstate = ""

    def __init__(self, message: str, sqlstate: str = "", detail: Optional[str] = None, hint: Optional[str] = None):
        super().__init__(message)
        self.message = message
        self.sqlstate = sqlstate or self.sqlstate
        self.detail = detail
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.sqlstate}: {self.message}" if self.sqlstate else self.message


class LeaseLost(BatonError):
    """DU001: the generation no longer holds the delivery (reaped, cancelled, claimed again)."""

    sqlstate = "DU001"


class TenantNotWritable(BatonError):
    """DU002: the tenant does not exist or is not active (quiescing, fenced, deleted)."""

    sqlstate = "DU002"


class TransitionNotAllowed(BatonError):
    """DU003: a decision names a stage outside the allowed ones, or is malformed."""

    sqlstate = "DU003"


class CorruptHistory(BatonError):
    """DU004: a run's saved stages are inconsistent."""

    sqlstate = "DU004"


class TargetNotAuthorized(BatonError):
    """DU005: the role is not a member of the role bound to the target."""

    sqlstate = "DU005"


class DigestMismatch(BatonError):
    """DU006: an approval's digest differs from the run's inputs."""

    sqlstate = "DU006"


class InvalidState(BatonError):
    """DU007: the call is not valid in the object's current state."""

    sqlstate = "DU007"


class NotFound(BatonError):
    """DU008: the run, delivery, stage, workflow or binding does not exist in that tenant."""

    sqlstate = "DU008"


class DuplicateKey(BatonError):
    """DU009: an enqueue or submit reuses its key with another payload, binding or inputs."""

    sqlstate = "DU009"


class InvalidArgument(BatonError):
    """22023 (or 22004, a NULL argument): bad input; nothing was changed."""

    sqlstate = "22023"


class PermissionDenied(BatonError):
    """42501: the role may not call this function."""

    sqlstate = "42501"


class ReadOnly(BatonError):
    """25006: a write in a read-only transaction or on a standby."""

    sqlstate = "25006"


# The contract's names of the two classes named otherwise.
TenantFenced = TenantNotWritable
DedupConflict = DuplicateKey

BY_SQLSTATE: Dict[str, Type[BatonError]] = {
    cls.sqlstate: cls
    for cls in (LeaseLost, TenantNotWritable, TransitionNotAllowed, CorruptHistory, TargetNotAuthorized,
                DigestMismatch, InvalidState, NotFound, DuplicateKey, InvalidArgument, PermissionDenied, ReadOnly)
}
BY_SQLSTATE["22004"] = InvalidArgument


def from_psycopg(e: psycopg.Error) -> BatonError:
    """The BatonError of a psycopg error's SQLSTATE (BatonError itself for any other)."""
    diag = e.diag
    cls = BY_SQLSTATE.get(e.sqlstate or "", BatonError)
    message = diag.message_primary or str(e).strip()
    return cls(message, e.sqlstate or "", diag.message_detail, diag.message_hint)
