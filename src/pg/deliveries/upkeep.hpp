// Keeps baton.leases, baton.ready and the claim hints in step with a delivery's writes:
// the one module that does it, for every writer of baton.deliveries. The fence trigger
// calls move() for each row a statement writes; the direct path (pg/deliveries/
// delivery_direct.cpp), which passes no trigger, calls move() for each row a claim
// takes and inserted() for the rows of enqueue_batch's multi-insert. What a move changes
// is core's rule (core/upkeep.hpp); the side tables' writes are side_rows' (side_rows.hpp),
// the hints' claim_hints' (claim_hints.hpp).
#pragma once

#include "core/upkeep.hpp"
// (core headers before Postgres headers)
#include "pg/deliveries/side_rows.hpp"
#include "pg/runtime/postgres.hpp"

namespace baton::pg::upkeep {

// A delivery's version: core's view of it, and the values its side rows take.
struct Version {
    baton::upkeep::Version core;
    const pg_uuid_t* tenant;
    const text* target;
    std::int32_t priority;
    const text* key;  // nullptr: none
};

// The columns of baton.deliveries (or of a shard of it) a version is read from.
struct Columns {
    AttrNumber tenant, id, target, status, priority, run_after, generation, lease_until;
    AttrNumber key;  // 0: the table has no key column (a schema before keys)
};

// The version in `slot` (its values stay the slot's). Postgres calls only.
Version read(TupleTableSlot* slot, const Columns& c);

// The side tables a call writes with baton.deliveries (or a shard of it), each opened on
// its first write; close() closes those opened.
struct Writers {
    Relation deliveries;
    side_rows::Writer* leases;
    side_rows::Writer* ready;
    Relation ready_open;  // baton.ready as the caller has it open (side_rows::adopt()), or nullptr
};
inline Writers writers(Relation deliveries) { return {deliveries, nullptr, nullptr, nullptr}; }
void close(Writers* w);

// One delivery written from `before` to `after` (nullptr: none, an insert's before or a
// delete's after): the claim hints told of a row taken or made pending, before's ready
// row removed and after's added when it moved in claim order, after's lease added when it
// is new (baton::upkeep::changes()). A delivery of a limited key enters the claim order
// only when its key admits it, and one that leaves the key's admitted frees its slot
// (pg/deliveries/key_admission.hpp). before_ready: where before's ready row lies when the
// caller has read it (a claim), else nullptr (found by its key). after_tid: where after
// is written when known (a ready row's row_tid), else nullptr. Postgres calls only.
void move(Writers* w, const Version* before, const Version* after, const ItemPointerData* before_ready = nullptr,
          const ItemPointerData* after_tid = nullptr);

// move() from no version for each of n deliveries without a key inserted together at
// status pending (enqueue_batch's direct insert): their ready rows written as one multi-insert
// (side_rows::add_ready_all()), the claim hints told of each. Postgres calls only.
void inserted(Writers* w, const pg_uuid_t* tenant, const side_rows::ReadyRow* rows, int n);

}  // namespace baton::pg::upkeep
