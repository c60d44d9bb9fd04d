// A call served on the worker that holds its tenant's shards, as one server serves it.
//
// On a distributed install a pg_baton call reaches its tables through Citus' planner,
// statement by statement, even on the node whose shards hold the tenant's rows. There,
// once the call holds the tenant's shard group in place (citus_hold.hpp), the call can
// read and write those shards as one server reads and writes the tables: the direct
// heap and index access (pg/deliveries/delivery_direct.hpp), the fence's and the
// bindings' index probes, the authorization cache. Each table the call opens by name
// (pg/runtime/relations.hpp) is then the tenant's shard of it: for a tenant table, the
// shard colocated with the tenant's shard of baton.tenants; for a global (reference)
// table, its one shard, placed on every node.
//
// Only for a call whose transaction is not a block (its top-level statement is the
// transaction; a subtransaction inside it, a PL/pgSQL exception block, is no matter):
// Citus keeps, per transaction, whether it reached this node's shards in this backend
// (its local execution) or over a connection, and whether a commit needs two phases;
// writes it does not see must not share a transaction with its own. So a call inside
// BEGIN ... COMMIT, or with citus.enable_local_execution off, takes Citus' path, as does
// a call whose tenant's shards are elsewhere. A call Citus delegated to this node
// (function delegation) is its transaction's only work: it is served here.
#pragma once

#include "pg/runtime/boundary.hpp"

namespace baton::pg::local_group {

// Whether a call of this transaction may be served from shards here at all (not a block,
// the settings on): citus::hold_shard_group() reads where the group is only then.
bool may_serve();

// From citus::hold_shard_group(), once the hold is taken: `tenants_shard` is the
// tenant's shard of baton.tenants, `here` whether this node holds its placement. Serves
// the current call (boundary.hpp, current_call()) from the shards when it may (see
// above); else makes sure it does not.
void enter(const pg_uuid_t* tenant, std::int64_t tenants_shard, bool here);

// True when the current call is served from its tenant's shards here, and that tenant
// is `tenant` (any tenant when nullptr).
bool active(const pg_uuid_t* tenant = nullptr);

// True on a distributed install unless the current call is served from the shards of
// `tenant` here: its tables are then reached by statements, through Citus' planner.
bool routed(const pg_uuid_t* tenant);

// From the executor hook (pg/citus/citus_nested), as a statement runs at the top of the
// backend: whether its transaction is a block (BEGIN, or several statements sent as one
// query string), which enter() reads. Postgres calls only, none that can fail.
void top_statement_runs();

// Registers the shard look-up with pg/runtime/relations (from _PG_init).
void install();

}  // namespace baton::pg::local_group
