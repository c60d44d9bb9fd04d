# enqueue_batch's Citus form. Its checks do arithmetic on ids of one sequence (the
# batch's ids follow the call before it; each item, taken or failed, uses one id). On
# Citus a call delegated to the tenant's worker takes ids from that worker's range, and
# a call inside a statement (CREATE TABLE ... AS) from the coordinator's: the file's
# calls would mix two sequences. A value of the session's own for a baton.* setting
# (here the default, 1 MB) keeps every call of the session on the coordinator
# (docs/internals/citus.md, "Session settings and delegated calls"), its
# statements routed to the tenant's shards: every id comes from the coordinator's
# sequence, and every check of the file applies unchanged.
/^SET client_min_messages = warning;$/a\
SET baton.max_payload_bytes = '1MB';
# The plan of a lookup by the dedup key: on Citus it is the worker's, under a Custom
# Scan that names the node's socket directory, a temporary one of each run; the shards'
# index is checked by test/citus/upgrade.sh (every shard has the single-node indexes).
/^EXPLAIN (COSTS OFF) SELECT id FROM baton.deliveries WHERE tenant = :'dk' AND target = 'x' AND dedup_key = 'key';$/d
