// Holding a tenant's shard group in place for a transaction, on a Citus install.
//
// A pg_baton call decides on rows it has read and locked (FOR UPDATE) and writes them in
// later statements of its transaction. On one node the row lock keeps the rows as read.
// On Citus a shard move does not wait for row locks: it waits only for Citus' shard
// metadata lock, which Citus' own executor takes (share mode) for a write and a move
// takes exclusively on the coordinator and on every worker. A call that read on the old
// placement could then write on the new one, over a row another call changed there in
// between (a cancel overwritten by a retry decided on the old placement). So every
// write call takes that lock itself, in share mode, before its first read: a move then
// happens between such transactions, never inside one, and the row locks hold as on
// one node.
#pragma once

#include "pg/runtime/boundary.hpp"

namespace baton::pg::citus {

// On a distributed install, holds the shard group of tenant in place until this
// transaction ends: Citus' metadata lock of the tenant's shards, in share mode, on this
// node (waiting while a move of the group blocks writes). Nothing elsewhere. One
// statement (the tenant's shard id) and the lock, skipped when this subtransaction took
// them for the same tenant last.
void hold_shard_group(const pg_uuid_t* tenant);

// On a distributed install, true when this node holds a placement of the tenant's shard
// group: its rows (its state, its bindings) are written here and nowhere else, so the
// invalidations of their writes reach this node's backends. Reads Citus' metadata (one
// statement); meant under the hold above, so that no move changes the answer before the
// transaction ends. False on one node.
bool shard_group_here(const pg_uuid_t* tenant);

}  // namespace baton::pg::citus
