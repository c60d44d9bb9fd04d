// What baton.health reads, in one place: every statement of its checks (on pg_baton's
// tables, pg_stat_user_tables, pg_prepared_xacts, pg_replication_slots), the sessions'
// xmins from the backend status array, and the reaper's last batch from shared memory.
// Each reader returns the plain struct src/core/health.hpp judges. No reader counts every
// row of a table: each walks an index from its first entry (ORDER BY ... LIMIT 1) or
// counts at most health::kCountCap rows of a partial index.
#pragma once

#include <vector>

#include "core/health.hpp"
// (core headers before Postgres headers)
#include "pg/runtime/spi.hpp"

namespace baton::pg::health_store {

// The sessions (of every database but this one's own backend) with an xmin or a
// transaction id, the prepared transactions and the replication slots with an xmin.
std::vector<health::Holder> xmin_holders(Spi& spi);

// pg_stat_user_tables' counts of the tables of schema baton (this node's). On a
// distributed install this node's shards' counts instead of the distributed tables'
// (empty shells on every node), read by the shards' relation ids (see pg/citus/local_shards):
// a worker's rows are its own shards'; the coordinator's its own placements (of the
// reference tables) and local tables, not the workers' shards.
std::vector<health::TableRows> baton_tables(Spi& spi);

// The claimed deliveries whose lease expired: the count and the oldest.
health::ExpiredLeases expired_leases(Spi& spi);

// The expired leases this node's reaper takes back: on a worker of a distributed
// install, those of its own shards (each node's reaper reaps its own tenants), counted
// to at most health::kCountCap; elsewhere (one node, the coordinator, whose reap covers
// every node) `counted`, expired_leases()' count.
std::int64_t expired_here(Spi& spi, std::int64_t counted);

// Runs stuck for at least `stuck_after_seconds` (health.hpp, StuckRuns).
health::StuckRuns stuck_runs(Spi& spi, double stuck_after_seconds);

// Markers in progress claimed under an older generation than their run's.
health::MarkersInDoubt markers_in_doubt(Spi& spi);

// Schedules of active tenants whose next slot is at least `warn_seconds` overdue, read
// from baton.schedule_rows on its index schedule_rows_due.
health::SchedulesBehind schedules_behind(Spi& spi, double warn_seconds);

// The bindings and targets paused, and the pause in place longest.
health::Paused paused(Spi& spi);
health::WaitingOnLimits waiting_on_limits(Spi& spi);

// The due pending delivery that became due first (baton.ready's index ready_due).
health::OldestPending oldest_pending(Spi& spi);

// The reaper of this database: the preload, baton.reaper_databases, its last batch (from
// the launcher's shared memory), the server's start, the interval; `expired_leases` as
// counted by expired_here().
health::ReaperState reaper_state(std::int64_t expired_leases);

// Appends a check as a row of baton.health_checks().
void emit(ReturnSetInfo* rsinfo, const health::Check& check);

}  // namespace baton::pg::health_store
