// pg_baton's hooks for a Citus install: the planner, utility and executor hooks in front
// of Citus', and the runtime's hooks (pg/runtime/hooks.hpp) that check a call made inside
// a shard query.
#pragma once

#include "pg/runtime/postgres.hpp"

namespace baton::pg::citus {

// Registers the runtime's hooks (pg/runtime/hooks.hpp) from _PG_init, preloaded or not:
// the checks of calls inside shard queries (citus_nested.hpp), and custom plans on a
// distributed install (KeptPlan in pg/runtime/spi.hpp: Citus cannot make a distributed
// plan of many of pg_baton's statements as generic plans ("could not create distributed
// plan"), and crashes on the generic plan of an UPDATE with now() inside a CASE).
void install_runtime_hooks();

// Installs pg_baton's planner and utility hooks in front of those loaded before it
// (Citus'), from _PG_init when preloaded.
//
// The planner hook: on a distributed install it hides a NULL tenant literal of a
// top-level call from Citus' function delegation, which hashes the null datum and
// crashes the backend (`SELECT baton.create_tenant(NULL)`); the call then
// runs where it was made and refuses the NULL (22004) as on a single node. It hides the
// tenant of such calls the same way while the session has a pg_baton setting of its own
// (SET baton.max_payload_bytes = ..., and the like): Citus does not pass it to the
// worker a call is delegated to, so the call runs where it was made, with the session's
// settings, its statements routed to the tenant's shards. And it hides the tenant of
// every call of a SELECT that is not, as written, the call alone (`SELECT f(...)`,
// `SELECT ... FROM f(...)`, without WHERE, WITH, a subquery or a set operation): Citus
// looks for its delegable shapes after its planner has rewritten the statement, so a
// call inside a subquery in FROM, an inlined CTE or a LATERAL item would be delegated
// from that rewritten tree, which Citus crashes deparsing (SIGSEGV in
// AcquireRewriteLocks); such a call runs where it was made instead.
//
// The utility hook: every statement of pg_baton's own install and update scripts runs
// with citus.enable_ddl_propagation off (for that statement only). Citus runs CREATE and
// ALTER EXTENSION pg_baton on every node itself, so each node's script already changes
// that node's tables; Citus propagating the script's statements too would apply them
// twice, and Citus sends the whole script text as "the command" of a statement
// inside it ("cannot insert multiple commands into a prepared statement"). The shards
// get what an update adds to their tables from baton.distribute().
//
// The executor hook (pg/citus/citus_nested) keeps the statements the backend is running, to
// find a pg_baton function called inside a shard query.
void install_hooks();

}  // namespace baton::pg::citus
