// The narrow tables kept in step with baton.deliveries, so that the delivery's own table
// needs no index on a column a claim, a renew or a finish changes
// (docs/internals/architecture.md, "The side tables of deliveries"):
//
//   baton.leases  a row per lease held (tenant, id, generation, lease_until), in order
//                 of expiry, for reap. Added whenever a delivery row is written claimed
//                 with a lease it did not hold before (a claim, a renew, a row claimed by
//                 direct SQL or loaded by a restore), removed by the write that ends the
//                 lease (a finish, a retry, a cancel, a renew, a reap, a deletion), so the
//                 table holds the leases in flight and reap reads only those that expired
//                 while held (pg/deliveries/delivery_statements.cpp). A row left behind by
//                 a write that passed no trigger is stale: reap deletes it once expired.
//   baton.ready   a row per pending delivery (tenant, target, rank, id, run_after,
//                 and row_tid: where enqueue_batch wrote the delivery's row, a hint a
//                 claim checks before use), in claim order, for claim (and by
//                 run_after, for baton.health): added
//                 when a row becomes pending (enqueue, retry, reap, redrive, direct SQL),
//                 removed when it stops being one (claim, cancel, deletion), both by the
//                 transaction that holds the delivery's row, so a ready row is never
//                 removed by two transactions at once.
//
// A side row can be left behind without harm: a write that passes no trigger
// (session_replication_role = replica), or a user's BEFORE trigger that drops a row after
// the fence wrote its side rows, leaves a stale ready row (claims check the delivery is
// pending and skip it; the delivery's next move to pending replaces it) or a stale lease
// row (reap sweeps it once expired).
//
// pg/deliveries/upkeep.hpp decides which side rows a write changes and calls these
// functions, from the fence trigger for every write that passes it and from the direct
// claim and insert, which pass no trigger. The writes are heap writes, which fire no
// trigger: the side tables' own fence triggers guard the writes of other writers (direct
// SQL), and the side rows written here go with a delivery row that has passed the fence.
// A side table with triggers other than pg_baton's (pg_repack's, which logs the writes
// made while it copies the table) is written by SQL statements, so that its triggers see
// them; its fence trigger then lets the rows the fence trigger of deliveries writes (a
// restore's among them) through at once (src/api/triggers.cpp), and finds the call's
// tenant checked already for the others (the fence keeps its reads for the
// transaction). On Citus the delivery written is a row of a shard (deliveries_102008) on
// the node that holds it, and the side rows go to the shards colocated with it, on the
// same node, in the same transaction.
#pragma once

#include <cstdint>

#include "pg/runtime/postgres.hpp"

namespace baton::pg::side_rows {

enum class Table { kLeases, kReady };

// One side table (or on Citus its shard colocated with `deliveries`) opened for a call's
// writes.
struct Writer;

// True when `table` has triggers other than pg_baton's own fence (pg_repack's while it
// copies the table, a user's; pg/runtime/relations::only_own_triggers): its writes then go
// through SQL statements, which fire them, and the direct claim, which writes baton.ready
// by heap access, is not used. Postgres calls only.
bool has_triggers(Table table);

// Opens `table` for writes that go with `deliveries` (baton.deliveries, or on Citus one
// of its shards). Postgres calls only (call them all inside guard()).
Writer* open(Relation deliveries, Table table);
// A writer over `rel`, `table` itself (not a shard), which the caller opened with
// RowExclusiveLock, found to have no triggers but pg_baton's own, and closes after
// close(): the direct claim's baton.ready. Postgres calls only.
Writer* adopt(Relation rel, Table table);
void close(Writer* w);

// baton.leases: adds a lease, as the one row with its key (a row with that key left by a
// write that passed no trigger goes); removes the row of a lease that ended (by its key;
// nothing when there is none).
void add_lease(Writer* w, const pg_uuid_t* tenant, std::int64_t id, std::int64_t generation,
               TimestampTz lease_until);
void remove_lease(Writer* w, const pg_uuid_t* tenant, std::int64_t id, std::int64_t generation,
                  TimestampTz lease_until);

// baton.ready's rank of a priority: negated, so that its primary key orders a target's
// rows by priority descending (then id ascending: a key cannot mix DESC and ASC).
inline std::int64_t rank_of(std::int32_t priority) { return -static_cast<std::int64_t>(priority); }

// baton.ready: adds the row of a delivery that became pending, with the tid its row was
// written at when the caller knows it (row_tid: nullptr when not; a claim then finds the
// delivery by its primary key); removes the row of one that stopped being pending (by its
// key; nothing when there is none).
void add_ready(Writer* w, const pg_uuid_t* tenant, const text* target, std::int32_t priority, std::int64_t id,
               TimestampTz run_after, const ItemPointerData* row_tid);
void remove_ready(Writer* w, const pg_uuid_t* tenant, const text* target, std::int32_t priority, std::int64_t id);
// remove_ready() of the ready row the caller has read at tid, under the snapshot of its
// call (a claim), sparing the probe of the key.
void remove_ready_at(Writer* w, const ItemPointerData* tid);

// add_ready() for the n rows of deliveries that became pending together (enqueue_batch's
// direct insert), their heap rows written a page at a time (heap_multi_insert). The
// values the rows point to outlive the call.
struct ReadyRow {
    const text* target;
    std::int32_t priority;
    std::int64_t id;
    TimestampTz run_after;
    const ItemPointerData* row_tid;
};
// The rows of one heap_multi_insert at most, and the bytes after which a round ends, as
// COPY buffers them (large payloads are not all held at once).
constexpr int kManyRows = 1000;
constexpr Size kManyBytes = 65535;
void add_ready_all(Writer* w, const pg_uuid_t* tenant, const ReadyRow* rows, int n);

// The heap tuple slots for a heap_multi_insert of up to n rows of rel (at most
// kManyRows; their number in *nslots), pinning nothing; drop_slots() drops them.
// Postgres calls only.
TupleTableSlot** make_slots(Relation rel, int n, int* nslots);
void drop_slots(TupleTableSlot** slots, int nslots);

// Adds what the deliveries hold and the side tables lack: the leases of the claimed rows
// and the ready rows of the pending ones: what the update that creates the side tables
// writes, on one node from its script (baton.fill_side_tables()) and on Citus from
// distribute(), once the tables are distributed (a distributed INSERT ... SELECT, each
// shard group on its node). Idempotent. Its rows pass the side tables' fence triggers
// (writing()) where they fire in this backend. Postgres calls only, inside an SPI
// connection.
void fill();

// True while pg_baton writes side rows that go with delivery rows: the fence trigger on
// deliveries (its writes to a side table with triggers other than pg_baton's are
// statements), or fill(). The side tables' own fence trigger lets those rows through at
// once: the delivery row has passed the fence, or is a restore's (src/api/triggers.cpp).
bool writing();
// Holds writing() true for its lifetime, in the fence trigger on deliveries (its
// destructor runs on an error too: guard() throws it as a C++ exception).
class Writing {
  public:
    Writing();
    ~Writing();
    Writing(const Writing&) = delete;
    Writing& operator=(const Writing&) = delete;
};

}  // namespace baton::pg::side_rows
