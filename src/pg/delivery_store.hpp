// baton.deliveries through direct heap and index access, for the two calls every worker
// makes in a loop: claim and finish (and finish_batch). An SPI statement pays for its
// executor start-up on every call (the plan's nodes, six indexes, a RETURNING
// projection: more than half of a claim and finish, docs/performance.md); here a claim
// is one index scan of deliveries_claimable and an update per row, a finish one probe of
// the primary key and an update, with the indexes inserted into by the executor's own
// ExecInsertIndexTuples.
//
// What the statements gave and this keeps:
//   - READ COMMITTED: a finish of a row changed since the snapshot locks its latest
//     version and checks it again (what an UPDATE's EvalPlanQual does); a claim skips
//     rows another transaction holds (SKIP LOCKED) or changed since the snapshot.
//     REPEATABLE READ and SERIALIZABLE: a row changed since the snapshot is a
//     serialization failure (40001), as for an UPDATE; the index and heap access
//     methods take the predicate locks.
//   - The fence trigger's work: the caller has checked the tenant's fence; a claim tells
//     the claim hints about each row it takes, before the write (as the trigger would);
//     the rows written always keep the row rules (their statuses are constants here).
//   - The table's NOT NULL and CHECK constraints are checked on every row written, as
//     an UPDATE checks them (ExecConstraints).
//   - Every other trigger, rule, generated column, row security, Citus: open() returns
//     null when the table has triggers other than pg_baton's own (a user's audit
//     trigger), rules, stored generated columns or row security, when Citus is loaded
//     (its tables are not the local heap), and when baton.direct_access is off; the
//     caller then runs its SPI statements.
//
// Every function here runs its Postgres calls under guard(): a Postgres error comes
// out as a PgError, and the resources it held (relation, buffers, snapshot) are
// released by the transaction's abort.
#pragma once

#include <cstdint>

#include "core/claim_hint.hpp"
// (core headers before Postgres headers)
#include "pg/postgres.hpp"

namespace baton::pg::delivery_store {

// baton.deliveries opened for direct reads and writes, with its indexes, under a
// snapshot of its own (a new one per call under READ COMMITTED, as a statement gets).
struct Table;

// Opens the table, or returns nullptr when the SPI statements must be used instead.
Table* open();
// Closes it; its writes are visible to the commands that follow.
void close(Table* table);

// The part of deliveries_claimable a claim scans, in claim order: all of a target, the
// rest of a priority level from a position, or the levels below a priority.
enum class Range { kAll, kLevel, kBelow };

// A claim's index scan over one range, for up to max_rows rows.
struct Cursor;
Cursor* begin_claim(Table* table, const pg_uuid_t* tenant, const text* target, Range range,
                    claim_hint::Position from, int max_rows);
void end_claim(Cursor* cursor);

// The next row of the range that is pending and due at `now` (not yet taken).
struct Candidate {
    bool found;
    claim_hint::Position at;
    TimestampTz run_after;
};
Candidate next_candidate(Cursor* cursor, TimestampTz now);

// A claimed row, its values copied into the current memory context.
struct Claimed {
    std::int64_t id;
    std::int64_t generation;
    TimestampTz lease_until;
    Datum dedup_key;
    Datum payload;
    Datum binding;
    std::int32_t attempt;
    bool has_run;
    Datum run_id;
    claim_hint::Position at;
};

// A claim writes in two steps. reserve(): writes the claimed version of the candidate
// just returned by next_candidate() to the heap (status 'claimed', generation + 1,
// attempts + 1, lease_until): from then on no other transaction can take it. False when
// another transaction holds it, or changed it after the snapshot (READ COMMITTED: left
// to a later claim; REPEATABLE READ and SERIALIZABLE: 40001). complete(): the index
// entries of the i-th row reserved, and its values into out. A claim of several rows
// reserves them all first, as FOR UPDATE SKIP LOCKED locks all its rows before the
// UPDATE writes them: claimers that start at the same place pass over each other's rows
// with one failed attempt each instead of racing over rows whose index entries are
// being written (16 claimers of 50 rows: 1.4 times faster than writing each row whole as
// the scan reaches it), and without a lock of its own on each row (one WAL record less
// than FOR UPDATE). Until complete(), only the claiming transaction's own version of
// the row lacks its index entries; no one else can see it.
bool reserve(Cursor* cursor, TimestampTz lease_until);
void complete(Cursor* cursor, int i, TimestampTz lease_until, Claimed* out);

// A delivery as a settling call found it, and whether it settled it.
struct Settled {
    bool found;    // false: no such delivery (visible to this call)
    bool applied;  // true: it was claimed at the caller's generation and is now settled
    const char* status;  // the status as stored (after the write, when applied)
    std::int64_t generation;
    std::int32_t attempts;
    std::int32_t max_attempts;
    const char* target;
};

// Settles (tenant, id) held at `generation`: status `outcome`, lease_until NULL,
// settled_at now(), and result (unless keep_result). Otherwise changes nothing and
// reports the row as found.
Settled settle(Table* table, const pg_uuid_t* tenant, std::int64_t id, std::int64_t generation,
               const char* outcome, const Jsonb* result, bool keep_result);

// The role bound to (tenant, target), InvalidOid when unbound: one probe of the
// primary key of baton.target_bindings, under the active snapshot.
Oid bound_role(const pg_uuid_t* tenant, const char* target, int target_len);

}  // namespace baton::pg::delivery_store
