// The monotonic counters of deliveries per tenant and target: enqueued, claimed,
// finished, failed, retried, cancelled, reaped, redriven (core/event_count.hpp says which
// write counts what), in baton.event_counts and its view baton.delivery_counters. They
// never go down: purge deletes deliveries, not counts, and a restart keeps the table.
//
// Kept without a write on the hot path. A delivery's write (pg/deliveries/upkeep.cpp,
// for every writer: the functions, the direct path, direct SQL) counts into the
// transaction's memory; a subtransaction that aborts drops its own counts. At the commit
// (PRE_COMMIT, PRE_PREPARE) the transaction adds its sums to shared memory when pg_baton
// is preloaded; this database's reaper moves them into baton.event_counts each round
// (flush(), baton.flush_counts(), which whoever stands in for a reaper calls too). Without
// the preload, or when the shared table is full (baton.counted_targets), the transaction
// writes its sums into baton.event_counts itself, into one of kParts rows of (tenant,
// target) chosen by its backend, so that concurrent commits seldom wait for one row.
//
// So the view lags the commits by a reaper round at most, and a crash loses the counts
// not flushed yet (never counting anything twice). A prepared transaction is counted at
// PREPARE, also when ROLLBACK PREPARED ends it. With baton.count_events off (superuser)
// nothing is counted.
//
// Postgres calls only (errors are ereport's), but for flush(), C++ that makes them
// through guard() (errors are PgError).
#pragma once

#include <cstdint>
#include <optional>

#include "core/delivery.hpp"
#include "core/event_count.hpp"
// (core headers before Postgres headers)
#include "pg/runtime/postgres.hpp"

namespace baton::pg::event_counts {

// Rows of baton.event_counts per (tenant, target) that committing transactions write.
constexpr int kParts = 8;

// The shared memory (when preloaded) and the transaction callbacks (from _PG_init).
void init();

// A delivery of (tenant, target) written from `before` to `after` (std::nullopt: no
// version, or its status unknown).
void wrote(const pg_uuid_t* tenant, const text* target, std::optional<delivery::Status> before,
           std::optional<delivery::Status> after);

// n deliveries of (tenant, target) inserted together (enqueue_batch's multi-insert).
void enqueued(const pg_uuid_t* tenant, const text* target, int n);

// While set (reap()'s statements), a lease given back counts as reaped, not retried.
void set_reaping(bool on);

// While set (an INSERT ... ON CONFLICT DO NOTHING), an insert is not counted: the row
// trigger runs before the conflict is known; the caller counts what went in (enqueued()).
void set_inserting_speculatively(bool on);

// While set (a restore's COPY of baton.deliveries), nothing is counted: the restored
// baton.event_counts holds those counts already.
void set_restoring(bool on);

// Sets one of the three above for a scope.
class Scope {
public:
    Scope(void (*set)(bool)) : set_(set) { set_(true); }
    ~Scope() { set_(false); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

private:
    void (*set_)(bool);
};

// Moves this database's counts from shared memory into baton.event_counts (one row per
// (tenant, target), part 0) inside the caller's SPI connection; should the transaction
// abort, they go back into shared memory. Returns the rows written.
std::int64_t flush();

}  // namespace baton::pg::event_counts
