// A pg_baton function called inside a query that Citus runs on a shard: `SELECT state,
// baton.tenant_write_allowed(t) FROM baton.tenants WHERE tenant = t` through the
// coordinator. Citus sends the call into the shard query on the tenant's node, and
// refuses the function's own statements there ("a distributed query from a query on a
// shard", XX000) unless citus.allow_nested_distributed_execution is on, which would also
// let them go to other nodes over connections of their own, outside the query's
// transaction.
//
// pg_baton sets that setting for the call alone, and only when every statement of the
// call stays in the query's own transaction: the call reads (it writes nothing), its
// tenant is in a shard the query is reading here (of a pg_baton table, or of a table
// colocated with them), and that shard is placed on this node, so that Citus runs the
// call's statements by local execution in the same transaction, seeing what the
// transaction wrote to the tenant's shards (Citus sends every statement of one
// transaction on a shard group over one connection). Any other call inside a shard
// query is refused by pg_baton (0A000, naming the function): a call of another tenant,
// or without one, at its first statement (a function that runs none answers); every
// write before it reads its arguments, since Citus would commit it outside the
// statement's distributed transaction (it runs a SELECT on the shards as a read: without
// two-phase commit, each shard's part in a transaction of its own outside BEGIN ...
// COMMIT). A statement Citus itself runs as a delegated call (`SELECT f(...)` on a
// backend the coordinator connected), where it allows nested execution, is left to it.
#pragma once

#include "pg/runtime/boundary.hpp"

namespace baton::pg::citus_nested {

// Installs the executor hook that keeps the statements this backend is running, in
// front of the hook loaded before it (Citus'), from _PG_init when preloaded after
// Citus; without Citus it installs nothing (enter() then returns at once).
void install_hook();

// Citus' delegated calls, recognised by Citus' own rules (citus_nested.cpp): a statement
// Citus takes for a call delegated to this node is left to Citus, which allows its nested
// statements itself.
//
// From the planner hook (hooks.hpp), for a statement planned at the top of the backend (no
// other planning under way): whether Citus takes `parse` for a delegated call, asked
// before the next planner changes it; then delegated_call_planned() with the answer,
// once it is planned, which holds until the statement's run ends. Postgres calls only.
bool delegated_call(Query* parse);
void delegated_call_planned(bool delegated);

// From the utility hook (hooks.hpp), around every CALL (call_ends() on every way out): a CALL
// of a distributed procedure on a backend another node opened for Citus' work is a
// delegated procedure call until the outermost CALL ends. Postgres calls only.
void call_begins(const CallStmt* call);
void call_ends();

// The hooks of the boundary (pg/runtime/hooks.hpp), registered by install_hook().
//
// enter(), before a SQL-callable function's body: on a distributed install, inside a
// shard query, records the call (for refuse_statement() and refuse_write()) and sets
// citus.allow_nested_distributed_execution for a call of a tenant in a shard the query
// reads on this node; returns what it replaced (nullptr when it did nothing).
void* enter(FunctionCallInfo fcinfo);

// leave(), after the body: restores what enter() replaced; when unwinding after an error
// the setting is left to the abort, and it makes no Postgres call.
void leave(void* entered, bool unwinding);

// Throws 0A000 when the function running inside a shard query is not of the tenant of
// a shard the query reads on this node; returns otherwise. Called when pg_baton opens
// an SPI connection, before its first statement.
void refuse_statement();

// Throws 0A000 when `function` (e.g. "baton.finish"), a write, is called inside a shard
// query; returns otherwise. Called by require_read_write().
void refuse_write(const char* function);

}  // namespace baton::pg::citus_nested
