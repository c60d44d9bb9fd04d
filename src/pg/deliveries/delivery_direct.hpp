// The direct implementation of pg/deliveries/delivery_store.hpp: baton.deliveries through heap and
// index access, for the two calls every worker makes in a loop: claim and finish (and
// finish_batch), and for enqueue_batch's insert. An SPI statement pays for its
// executor start-up on every call (the plan's nodes, six indexes, a RETURNING
// projection: more than half of a claim and finish, docs/performance.md); here a claim
// is one index scan of baton.ready's primary key and, per row, a probe of the primary
// key, an update, the removal of its ready row and the insert of its lease
// (pg/deliveries/side_rows.hpp); a finish one probe of the primary key and an update, with the
// indexes inserted into by the executor's own ExecInsertIndexTuples.
//
// What the statements gave and this keeps:
//   - READ COMMITTED: a finish of a row changed since the snapshot locks its latest
//     version and checks it again (what an UPDATE's EvalPlanQual does); a claim skips
//     rows another transaction holds (SKIP LOCKED) or changed since the snapshot.
//     REPEATABLE READ and SERIALIZABLE: a row changed since the snapshot is a
//     serialization failure (40001), as for an UPDATE; the index and heap access
//     methods take the predicate locks.
//   - The fence trigger's work: the caller has checked the tenant's fence; a claim tells
//     the claim hints about each row it takes, before the write, removes its row from
//     baton.ready and adds its lease to baton.leases (pg/deliveries/side_rows.hpp), as the trigger
//     would; the rows written always keep the row rules (their statuses are the core's).
//   - The table's NOT NULL and CHECK constraints are checked on every row written, as
//     an UPDATE checks them (ExecConstraints).
//   - Every other trigger, rule, generated column, row security, Citus: open() returns
//     null when the table has triggers other than pg_baton's own (a user's audit
//     trigger), rules, stored generated columns or row security, when Citus is loaded
//     (its tables are not the local heap), and when baton.direct_access is off; the
//     store then runs its SQL statements.
//   - The index entries: as ExecInsertIndexTuples() writes them for an UPDATE, without
//     the uniqueness check of the primary key and the dedup key, which no claim or
//     settle changes (write_indexes() says why that is sound).
//
// Every function here runs its Postgres calls under guard(): a Postgres error comes
// out as a PgError, and the resources it held (relation, buffers, snapshot) are
// released by the transaction's abort.
#pragma once

#include <cstdint>

#include "pg/deliveries/delivery_store.hpp"

namespace baton::pg::delivery_direct {

// baton.deliveries opened for direct reads and writes (its primary key once a probe
// needs it, its other indexes once a write does), under a snapshot of its own (a new one
// per call under READ COMMITTED, as a statement gets).
struct Table;

// What a call opens the table for: a claim and an insert write the side tables too, a
// settle writes neither.
enum class Use { kSettle, kClaim, kInsert };

// Opens the table, or returns nullptr when the SQL statements must be used instead.
Table* open(Use use);
// Closes it; its writes are visible to the commands that follow.
void close(Table* table);

// Claims up to n rows of one range, in claim order (the index's), into call.rsinfo,
// telling the claim hints about each row before it is written, as the fence trigger
// does for a statement's writes.
//
// A claim writes in two steps. First each row's claimed version goes to the heap
// (status claimed, generation + 1, attempts + 1, lease_until): from then on no other
// transaction can take it; a row another transaction holds, or changed after the
// snapshot, is passed over (READ COMMITTED: left to a later claim; REPEATABLE READ and
// SERIALIZABLE: 40001). Then the index entries of all of them. Reserving all rows first,
// as FOR UPDATE SKIP LOCKED locks all its rows before the UPDATE writes them, lets
// claimers that start at the same place pass over each other's rows with one failed
// attempt each instead of racing over rows whose index entries are being written (faster
// than writing each row whole as the scan reaches it: docs/performance.md, gain 12),
// without a lock of its own on each row (one WAL record less than FOR UPDATE).
// Until then, only the claiming transaction's own version lacks its index entries; no
// one else can see it.
//
// can_claim() says whether this path may claim, before any write (call claim() only
// after it said yes): only when the table was opened for a claim or an insert, with
// baton.ready, and not while baton.ready or baton.leases has triggers (pg_repack's while
// it copies the table), which the direct writes to them would pass by. A settle writes
// neither, so open(Use::kSettle) leaves both alone.
bool can_claim(Table* table);
Claimed claim(Table* table, const ClaimCall& call, ClaimRange range, claim_hint::Position from, std::int64_t n);

// Settles (tenant, id) where the caller holds its lease at `generation`: status
// `outcome`, lease_until NULL, settled_at now(), and result (unless keep_result).
// Otherwise changes nothing. The row as found (after the write, when it wrote); its role
// is left to bound_role().
FoundDelivery settle(Table* table, const pg_uuid_t* tenant, std::int64_t id, std::int64_t generation,
                     delivery::Status outcome, const Jsonb* result, bool keep_result);

// enqueue_batch's insert of n new deliveries (items[i] with id ids[i]) as its INSERT
// statement and the fence trigger would write them: each row from its item and the
// table's column defaults (status pending), checked against the table's NOT NULL and
// CHECK constraints (ExecConstraints), into the heap a round at a time (up to
// side_rows::kManyRows rows or kManyBytes, one heap_multi_insert) and then into every
// index, a key already taken raising 23505 as the INSERT would; then the round's
// baton.ready rows added the same way, as the trigger would add them, and once the
// insert has succeeded (inserted()) the claim hints told of each row. The caller has
// checked the tenant's fence.
//
// can_insert() says whether this path may take the items, before any write, and prepares
// the defaults, the slots and the indexes insert() uses (call insert() only after it said yes): not when the
// side tables have triggers (can_claim()), when an item
// names a run (its foreign key is the statement's trigger to check), when the caller
// lacks INSERT on the table, or when the default of status is not 'pending'. The rows
// then keep the row rules the trigger checks: status pending, and max_attempts at least
// 1, as enqueue_batch's check of each item requires. insert() is Postgres calls only, for
// a subtransaction (attempt()): a key found taken rolls back every row it wrote.
bool can_insert(Table* table, const NewDelivery* items, int n);
void insert(Table* table, const pg_uuid_t* tenant, const NewDelivery* items, int n, const std::int64_t* ids);
// After insert() raised inside its subtransaction: forgets the indexes' insert state,
// whose buffers the subtransaction's rollback released.
void insert_failed(Table* table);
void inserted(const pg_uuid_t* tenant, const NewDelivery* items, int n, const std::int64_t* ids);

// The role bound to (tenant, target), InvalidOid when unbound: one probe of the
// primary key of baton.target_bindings, under the latest snapshot (as the fence reads
// the tenant: a binding committed before the call counts whatever the isolation level,
// and pg/access/authz_cache's entry is no older than its ticket).
Oid bound_role(const pg_uuid_t* tenant, const char* target, int target_len);

}  // namespace baton::pg::delivery_direct
