"""pg_baton's client side: the worker loop, a producer, the errors of its SQLSTATEs, and
the `baton` command line (see README.md)."""

from pg_baton.errors import BatonError, DuplicateKey, LeaseLost, NotFound, TenantNotWritable
from pg_baton.producer import Producer

__version__ = "0.15.0"
__all__ = ["BatonError", "DuplicateKey", "LeaseLost", "NotFound", "Producer", "TenantNotWritable", "__version__"]
