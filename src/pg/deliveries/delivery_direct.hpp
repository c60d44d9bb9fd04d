// The direct implementation of pg/deliveries/delivery_store.hpp: baton.deliveries through
// heap and index access, without an executor, for claim, finish and finish_batch (the
// calls every worker makes in a loop) and enqueue_batch's insert. A claim is one scan of
// baton.ready's primary key and, per row, a read of the delivery, its update, and its
// upkeep: the removal of its ready row and the insert of its lease (pg/deliveries/
// upkeep.hpp, as the fence trigger does it); a finish is a read of the row, its update,
// and the removal of its lease's row.
//
// It does what the statements' executor does, or open() returns nullptr and the store
// runs the statements: docs/internals/architecture.md, "What the direct path does with each
// executor duty", lists each duty. In short: NOT NULL and CHECK constraints by
// ExecConstraints, index entries and their unique and exclusion checks as
// ExecInsertIndexTuples() writes them (write_indexes()), the
// replica identity by CheckCmdReplicaIdentity; the statements for domain columns,
// generated columns, rules, row security, a trigger other than pg_baton's own (a user's
// foreign key, a deferrable constraint's recheck), missing privileges, Citus, and
// baton.direct_access off. The fence trigger's work is done inline: the caller has
// checked the tenant's fence, and a claim and an insert call the trigger's upkeep of
// the side tables and claim hints (pg/deliveries/upkeep.hpp).
//
// Isolation: under READ COMMITTED a finish of a row changed since the snapshot locks its
// latest version and checks it again (an UPDATE's EvalPlanQual), a claim skips rows
// another transaction holds or changed since the snapshot (SKIP LOCKED). Under
// REPEATABLE READ and SERIALIZABLE such a row is a serialization failure (40001); the
// access methods take the predicate locks.
//
// Every function runs its Postgres calls under guard(): a Postgres error comes out as a
// PgError, and what it held (relation, buffers, snapshot) is released by the abort.
#pragma once

#include <cstdint>

#include "pg/access/authz_cache.hpp"
#include "pg/deliveries/delivery_rows.hpp"

namespace baton::pg::delivery_direct {

// baton.deliveries opened for one call, under a snapshot of its own (a new one per call
// under READ COMMITTED, as a statement gets).
struct Table;

// What a call opens the table for: a claim and an insert write baton.ready, a claim and a
// settle baton.leases.
enum class Use { kSettle, kClaim, kInsert };

// Opens the table, or returns nullptr when the SQL statements must be used instead.
Table* open(Use use);
// Closes it; its writes are visible to the commands that follow.
void close(Table* table);

// Claims up to n rows of one range, in claim order, into call.rsinfo. Two steps: first
// each row's claimed version goes to the heap (from then on no other transaction can
// take it; a row another holds, or changed since the snapshot, is passed over), followed
// at once by its upkeep (upkeep::move(): the claim hints told, its ready row removed at
// the tid the scan read it at, its lease added); then the index entries of all of them.
// Reserving every row first, as FOR UPDATE SKIP LOCKED locks its rows before the UPDATE
// writes them, lets claimers that start at the same place pass over each other's rows
// with one failed attempt each, without a row lock of its own (one WAL record less).
// Only the claiming transaction's own versions lack their index entries meanwhile.
//
// can_claim(): whether this path may claim (call claim() only after it said yes): when
// the table was opened for a claim or an insert, with baton.ready, and neither side table
// has triggers (pg_repack's while it copies a table), which the direct writes would pass by.
bool can_claim(Table* table);
Claimed claim(Table* table, const ClaimCall& call, ClaimRange range, claim_hint::Position from, std::int64_t n);

// Settles (tenant, id) where the caller holds its lease at `generation`: status
// `outcome`, lease_until NULL, settled_at now(), and result (unless keep_result).
// Otherwise changes nothing. The row as found (after the write, when it wrote); its role
// is left to binding().
FoundDelivery settle(Table* table, const pg_uuid_t* tenant, std::int64_t id, std::int64_t generation,
                     delivery::Status outcome, const Jsonb* result, bool keep_result);

// enqueue_batch's insert of n new deliveries (items[i] with id ids[i]), as its INSERT
// and the fence trigger would write them: each row from its item and the columns'
// defaults, checked by domain_check and ExecConstraints, into the heap a round at a time (up to
// side_rows::kManyRows rows or kManyBytes, one heap_multi_insert), then into every index
// (a key taken raises 23505), then the round's upkeep (upkeep::inserted(): its baton.ready
// rows, and the claim hints told). The caller has checked the tenant's fence.
//
// can_insert(): whether this path may take the items, before any write; it prepares the
// defaults, slots and indexes insert() uses. Not when a side table has triggers, an item
// names a run (the foreign key's check is the statement's), or the default of status is
// not 'pending'. insert() is Postgres calls only, for a subtransaction (attempt()): a key
// found taken rolls back every row it wrote.
bool can_insert(Table* table, const NewDelivery* items, int n);
void insert(Table* table, const pg_uuid_t* tenant, const NewDelivery* items, int n, const std::int64_t* ids);
// After insert() raised inside its subtransaction: forgets the indexes' insert state,
// whose buffers the subtransaction's rollback released.
void insert_failed(Table* table);

// What binds (tenant, target): a probe of the primary key of baton.target_bindings (its
// role, weight and pause) and, unless the binding is paused, of baton.paused_targets,
// under the latest snapshot (as the fence reads the tenant: a binding committed before
// the call counts whatever the isolation level, and pg/access/authz_cache's entry is no
// older than its ticket).
authz_cache::Binding binding(const pg_uuid_t* tenant, const char* target, int target_len);

}  // namespace baton::pg::delivery_direct
