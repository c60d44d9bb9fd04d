// The checks of baton.health, free of Postgres: each takes what the Postgres layer read
// (src/pg/stores/health_store.hpp) and the thresholds of the session, and says the row: its
// status (ok, warn, critical), its value, a detail naming the object and a hint saying
// what to do. The reading is the store's; every judgement and every word is here.
#pragma once
#ifdef POSTGRES_H
#error "core headers are included before postgres.h (its macros rename libc functions)"
#endif

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace baton::health {

enum class Status { kOk, kWarn, kCritical };

// "ok", "warn", "critical".
const char* status_name(Status s);

// One row of baton.health. Every row has a value; `hint` is empty (NULL) on an ok row.
struct Check {
    const char* name;
    Status status;
    double value;
    std::string detail;
    std::string hint;
};

// The most rows a count of the checks reads (expired leases, stuck runs, markers in
// doubt, schedules behind): a count that reaches it is reported as "at least".
constexpr std::int64_t kCountCap = 10000;

// A duration for a detail: "42 s", "7 min 3 s", "2 h 5 min", "3 d 4 h".
std::string duration_text(double seconds);

// The age in transactions of `xid` when the next transaction id is `next` (both 32-bit
// transaction ids, compared modulo 2^32 as Postgres does: what age(xid) returns).
std::int64_t xid_age(std::uint32_t next, std::uint32_t xid);

// --- xmin_horizon ----------------------------------------------------------------------

enum class HolderKind { kSession, kPreparedTransaction, kReplicationSlot };

// Something that holds back the xmin horizon of the cluster.
struct Holder {
    HolderKind kind;
    std::int64_t xid_age;               // transactions since its xmin (or its xid)
    std::optional<double> age_seconds;  // since its transaction began (a session), since it
                                        // was prepared; unknown for a slot (Postgres 15
                                        // records no time) and a session outside a transaction
    std::int32_t pid;                   // a session's
    std::string user;                   // a session's user (or its backend type), a prepared
                                        // transaction's owner
    std::string database;               // a session's or prepared transaction's database
    std::string name;                   // a slot's name, a prepared transaction's gid
    bool active;                        // a slot: a consumer is connected
    bool own_xid;                       // its age is its own transaction id's (a prepared
                                        // transaction, a session with an xid): of holders
                                        // equally old, it holds the others' snapshots back
};

struct XminThresholds {
    double warn_seconds;      // baton.health_xmin_warn
    double critical_seconds;  // baton.health_xmin_critical
};

// The status of one holder: by its age in time when known; a slot (whose age Postgres 15
// does not record) warns when no consumer is connected to move it on, and a session outside
// a transaction (a walsender relaying a standby's feedback) is ok.
Status holder_status(const Holder& h, const XminThresholds& t);

// The holder the row names: the worst status, among equals the oldest xmin, and among
// those the owner of that transaction id. nullopt for no holder.
std::optional<Holder> worst_holder(const std::vector<Holder>& holders, const XminThresholds& t);

// The row: the worst holder named (a session by pid, user, database and age, a prepared
// transaction by gid, a slot by name). value: its age in seconds, or for a holder of
// unknown age its age in transactions.
Check xmin_horizon(const std::vector<Holder>& holders, const XminThresholds& t);

// --- dead_rows -------------------------------------------------------------------------

// A table of schema baton as pg_stat_user_tables counts it.
struct TableRows {
    std::string table;        // schema-qualified
    std::int64_t live;
    std::int64_t dead;
    std::string last_vacuum;  // the later of last_vacuum and last_autovacuum, as text; "" never
};

struct DeadRowsThresholds {
    double warn_fraction;  // baton.health_dead_rows_warn
    std::int64_t min_dead;  // baton.health_dead_rows_min
};

// dead / (live + dead); 0 for an empty table.
double dead_fraction(const TableRows& t);

// The row: the table with the most dead rows against live ones (among those with at
// least min_dead dead rows; any table when none has), warn when its fraction reaches the
// threshold. value: the fraction.
Check dead_rows(const std::vector<TableRows>& tables, const DeadRowsThresholds& t);

// --- reaper ----------------------------------------------------------------------------

struct ReaperState {
    bool preloaded;                        // pg_baton in shared_preload_libraries
    bool served;                           // baton.reaper_databases serves this database
    std::string database;                  // this database
    std::optional<double> since_run;       // seconds since its reaper last reaped a batch
    double since_start;                    // seconds since the server started
    double interval_seconds;               // baton.reaper_interval
    std::int64_t expired_leases;           // waiting in this database
};

// The row: warn "not preloaded" without the preload, warn when baton.reaper_databases
// leaves this database out; when the reaper has not reaped for three intervals, critical
// if expired leases wait, warn otherwise. value: seconds since it last reaped (since the
// server started when it never did).
Check reaper(const ReaperState& s);

// --- expired_leases --------------------------------------------------------------------

struct ExpiredLeases {
    std::int64_t count;       // capped at kCountCap
    std::string tenant;       // of the oldest expired lease
    std::string target;
    std::int64_t id;
    double expired_seconds;   // since its lease expired
};

// The row: warn when the oldest expired lease expired at least warn_seconds ago
// (baton.health_expired_warn): no reaper took it back. value: the count.
Check expired_leases(const ExpiredLeases& e, double warn_seconds);

// --- stuck_runs ------------------------------------------------------------------------

// Unfinished runs stuck for at least baton.health_stuck_after: the owner's lease expired,
// or the current stage failed, has attempts left and its retry deadline passed, while no
// owner holds a live lease (see docs/internals/choices.md).
struct StuckRuns {
    std::int64_t count;       // capped at kCountCap
    std::string tenant;       // of the longest stuck
    std::string run_id;
    std::string workflow;
    std::string owner;        // "" when none
    bool lease_expired;       // why: the owner's lease expired (else a retry deadline passed)
    std::string stage;        // the current stage ("" when none)
    double stuck_seconds;     // since the lease expired or the retry deadline passed
};

// The row: warn when any run is stuck. value: the count.
Check stuck_runs(const StuckRuns& s, double stuck_after_seconds);

// --- markers_in_doubt ------------------------------------------------------------------

struct MarkersInDoubt {
    std::int64_t count;       // capped at kCountCap
    std::string tenant;       // of the oldest claimed
    std::string run_id;
    std::int64_t entry_id;
    std::int32_t position;
    std::string kind;
    double claimed_seconds;   // since it was claimed
};

// The row: warn when any marker is in doubt (its run was taken over since it was claimed,
// and the new owner has not resolved it). value: the count.
Check markers_in_doubt(const MarkersInDoubt& m);

// --- schedules_behind ------------------------------------------------------------------

struct SchedulesBehind {
    std::int64_t count;       // capped at kCountCap
    std::string tenant;       // of the most overdue
    std::string name;
    double late_seconds;      // since its next_fire_at
};

// The row: warn when a schedule's next slot is at
// least warn_seconds overdue (baton.health_schedules_warn): nothing fires them. value:
// the count.
Check schedules_behind(const SchedulesBehind& s, double warn_seconds);

// --- paused ----------------------------------------------------------------------------

struct Paused {
    std::int64_t bindings;    // bindings paused, capped at kCountCap
    std::int64_t everywhere;  // targets paused in every tenant
    std::string tenant;       // of the pause in place longest; empty for a pause everywhere
    std::string target;
    double paused_seconds;    // since it began
};

// The row: ok whatever is paused (a pause is an admin's choice, and the deliveries that
// wait behind it show in oldest_pending); the detail names the pause in place longest.
// value: bindings and targets paused.
Check paused(const Paused& p);

// --- waiting_on_limits -----------------------------------------------------------------

struct WaitingOnLimits {
    std::int64_t count;       // deliveries a key's limit holds back, capped at kCountCap
    std::string tenant;       // of the one waiting longest
    std::string target;
    std::string key;
    double waiting_seconds;   // since it began to wait
};

// The row: ok whatever waits (a limit is an admin's choice); the detail names the key
// whose delivery has waited longest, and for how long. value: the deliveries waiting.
Check waiting_on_limits(const WaitingOnLimits& w);

// --- oldest_pending --------------------------------------------------------------------

struct OldestPending {
    bool any;                 // a pending delivery is due
    std::string tenant;
    std::string target;
    std::int64_t id;
    double due_seconds;       // since it became due (run_after)
};

// The row: warn when the oldest due pending delivery has waited at least warn_seconds
// (baton.health_pending_warn). value: its wait in seconds (0 when none).
Check oldest_pending(const OldestPending& p, double warn_seconds);

}  // namespace baton::health
