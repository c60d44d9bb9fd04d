// What baton.health reads (see health_store.hpp).
#include <algorithm>
#include <string>

#include "core/delivery.hpp"
#include "core/health.hpp"
// (core headers before Postgres headers)
#include "pg/runtime/args.hpp"
#include "pg/citus/citus.hpp"
#include "pg/stores/health_store.hpp"
#include "pg/workers/launcher.hpp"
#include "pg/citus/local_shards.hpp"
#include "pg/runtime/settings.hpp"
#include "pg/workers/served.hpp"

namespace baton::pg::health_store {

namespace {

#define EQ " OPERATOR(pg_catalog.=) "
#define LT " OPERATOR(pg_catalog.<) "
#define NOW "pg_catalog.now()"
// Seconds from a timestamptz column to now(), as float8.
#define SECONDS_SINCE(COL) "pg_catalog.date_part('epoch', " NOW " OPERATOR(pg_catalog.-) " COL ")"
// A count of at most $1 rows of FROM_WHERE (its other parameters following).
#define CAPPED_COUNT(FROM_WHERE) "SELECT pg_catalog.count(*) FROM (SELECT 1 " FROM_WHERE " LIMIT $1) c"

// Claimed deliveries whose lease expired: the live rows of baton.leases (their delivery
// claimed at that generation, with that lease_until) expired, on its primary key leases_pkey (lease_until first).
#define EXPIRED_FROM                                                                                 \
    "FROM baton.leases l JOIN baton.deliveries d ON d.tenant" EQ "l.tenant AND d.id" EQ "l.id "      \
    "AND d.generation" EQ "l.generation AND d.lease_until" EQ "l.lease_until "                       \
    "WHERE l.lease_until" LT NOW " AND d.status" EQ "'" BATON_STATUS_CLAIMED "'"
KeptPlan g_expired_count = {CAPPED_COUNT(EXPIRED_FROM), 1, {INT8OID}, nullptr};
KeptPlan g_expired_oldest = {
    "SELECT d.tenant::pg_catalog.text, d.target, d.id, " SECONDS_SINCE("d.lease_until") " " EXPIRED_FROM
    " ORDER BY d.lease_until LIMIT 1",
    0, {}, nullptr};

// Unfinished runs (index runs_runnable) with their current stage (index stages_current):
// since when the owner's lease expired, before the cutoff $2; since when the retry
// deadline of a failed stage with attempts left passed, before the cutoff, while no owner
// holds a live lease.
#define STUCK_FROM                                                                                         \
    "FROM (SELECT r.tenant, r.id, r.workflow, r.owner, s.stage, "                                          \
    "CASE WHEN r.owner IS NOT NULL AND r.lease_until" LT "$2 THEN r.lease_until END AS lease_since, "      \
    "CASE WHEN s.status" EQ "'failed' AND s.attempt" LT "s.max_attempts AND s.retry_at" LT "$2 "           \
    "AND (r.owner IS NULL OR r.lease_until" LT NOW ") THEN s.retry_at END AS retry_since "                 \
    "FROM baton.runs r LEFT JOIN baton.stages s ON s.tenant" EQ "r.tenant AND s.run_id" EQ "r.id "         \
    "AND s.is_current WHERE r.status" EQ "ANY ('{approved,running}'::pg_catalog.text[])) x "               \
    "WHERE x.lease_since IS NOT NULL OR x.retry_since IS NOT NULL"
KeptPlan g_stuck_count = {CAPPED_COUNT(STUCK_FROM), 2, {INT8OID, TIMESTAMPTZOID}, nullptr};
KeptPlan g_stuck_oldest = {
    "SELECT x.tenant::pg_catalog.text, x.id::pg_catalog.text, x.workflow, x.owner, x.lease_since IS NOT NULL, "
    "x.stage, " SECONDS_SINCE("LEAST(x.lease_since, x.retry_since)") " " STUCK_FROM
    " ORDER BY LEAST(x.lease_since, x.retry_since) LIMIT 1",
    2, {INT8OID, TIMESTAMPTZOID}, nullptr};

// Markers in progress (index markers_in_progress) claimed under an older generation than
// their run's (marker::in_doubt, set-wise).
#define IN_DOUBT_FROM                                                                            \
    "FROM baton.markers m JOIN baton.runs r ON r.tenant" EQ "m.tenant AND r.id" EQ "m.run_id "   \
    "WHERE m.state" EQ "'in_progress' AND m.run_id IS NOT NULL AND m.generation" LT "r.generation"
KeptPlan g_in_doubt_count = {CAPPED_COUNT(IN_DOUBT_FROM), 1, {INT8OID}, nullptr};
KeptPlan g_in_doubt_oldest = {
    "SELECT m.tenant::pg_catalog.text, m.run_id::pg_catalog.text, m.entry_id, m.\"position\", m.kind, "
    SECONDS_SINCE("m.claimed_at") " " IN_DOUBT_FROM " ORDER BY m.claimed_at LIMIT 1",
    0, {}, nullptr};

// Schedules of active tenants whose next slot is before the cutoff $2 (fire_schedules
// skips the others and keeps their schedules).
#define BEHIND_FROM                                                                              \
    "FROM baton.schedule_rows s JOIN baton.tenants t ON t.tenant" EQ "s.tenant "                 \
    "WHERE t.state" EQ "'active' AND s.next_fire_at" LT "$2"
KeptPlan g_behind_count = {CAPPED_COUNT(BEHIND_FROM), 2, {INT8OID, TIMESTAMPTZOID}, nullptr};
KeptPlan g_behind_oldest = {
    "SELECT s.tenant::pg_catalog.text, s.name, " SECONDS_SINCE("s.next_fire_at") " " BEHIND_FROM
    " ORDER BY s.next_fire_at LIMIT 1",
    2, {INT8OID, TIMESTAMPTZOID}, nullptr};

// The bindings paused (capped), the targets paused everywhere, and the pause in place
// longest (a scan of target_bindings, which holds a row per tenant and target).
// The deliveries waiting on a key's limit (capped), and the one waiting longest.
KeptPlan g_waiting_on_limits = {
    "SELECT (SELECT pg_catalog.count(*) FROM (SELECT 1 FROM baton.key_waiting k LIMIT $1) c), "
    "w.tenant::pg_catalog.text, w.target, w.key, " SECONDS_SINCE("w.since") " FROM (SELECT 1) one "
    "LEFT JOIN LATERAL (SELECT k.tenant, k.target, k.key, k.since FROM baton.key_waiting k ORDER BY k.since LIMIT 1) w "
    "ON true",
    1, {INT8OID}, nullptr};

KeptPlan g_paused = {
    "SELECT (SELECT pg_catalog.count(*) FROM (SELECT 1 FROM baton.target_bindings b WHERE b.paused_at IS NOT NULL "
    "LIMIT $1) c), (SELECT pg_catalog.count(*) FROM baton.paused_targets), x.tenant::pg_catalog.text, x.target, "
    SECONDS_SINCE("x.paused_at") " FROM (SELECT b.tenant, b.target, b.paused_at FROM baton.target_bindings b "
    "WHERE b.paused_at IS NOT NULL UNION ALL SELECT NULL, p.target, p.paused_at FROM baton.paused_targets p) x "
    "ORDER BY x.paused_at LIMIT 1",
    1, {INT8OID}, nullptr};

// The pending delivery due first: the first row of baton.ready on its index ready_due.
KeptPlan g_oldest_pending = {
    "SELECT d.tenant::pg_catalog.text, d.target, d.id, " SECONDS_SINCE("d.run_after") " FROM baton.ready d "
    "WHERE d.run_after OPERATOR(pg_catalog.<=) " NOW " ORDER BY d.run_after LIMIT 1",
    0, {}, nullptr};

// This node's counts of the tables of schema baton.
#define TABLES                                                                                           \
    "SELECT pg_catalog.format('%I.%I', s.schemaname, s.relname), s.n_live_tup, s.n_dead_tup, "           \
    "pg_catalog.date_trunc('second', GREATEST(s.last_vacuum, s.last_autovacuum))::pg_catalog.text "      \
    "FROM pg_catalog.pg_stat_user_tables s WHERE s.schemaname" EQ "'baton'"
KeptPlan g_tables = {TABLES " ORDER BY 1", 0, {}, nullptr};
// On a distributed install: this node's tables of schema baton that are not Citus'
// (the shells of the distributed tables hold no row on any node) and this node's
// placements of Citus' tables, the shards holding the rows (hidden from
// pg_stat_user_tables, which reads pg_class), their counts by relation id. A placement
// dropped meanwhile (a shard moved away) is left out.
KeptPlan g_tables_citus = {
    TABLES " AND NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition d WHERE d.logicalrelid" EQ "s.relid) "
    "UNION ALL SELECT lp.shard, pg_catalog.pg_stat_get_live_tuples(r.id), pg_catalog.pg_stat_get_dead_tuples(r.id), "
    "pg_catalog.date_trunc('second', GREATEST(pg_catalog.pg_stat_get_last_vacuum_time(r.id), "
    "pg_catalog.pg_stat_get_last_autovacuum_time(r.id)))::pg_catalog.text "
    "FROM " BATON_LOCAL_PLACEMENTS ", LATERAL (SELECT pg_catalog.to_regclass(lp.shard)) r(id) "
    "WHERE r.id IS NOT NULL ORDER BY 1",
    0, {}, nullptr};

// The prepared transactions and the replication slots holding an xmin.
KeptPlan g_prepared = {
    "SELECT p.gid, p.transaction, p.owner::pg_catalog.text, p.database::pg_catalog.text, " SECONDS_SINCE("p.prepared")
    " FROM pg_catalog.pg_prepared_xacts p",
    0, {}, nullptr};
KeptPlan g_slots = {
    "SELECT s.slot_name::pg_catalog.text, s.xmin, s.active FROM pg_catalog.pg_replication_slots s "
    "WHERE s.xmin IS NOT NULL",
    0, {}, nullptr};

// A text column as a string ("" for NULL).
std::string string_at(const Spi& spi, std::uint64_t row, int col) {
    const char* s = spi.cstring_at(row, col);
    return s ? s : "";
}

// A float8 column (0 for NULL; by value on the 64-bit platforms Postgres 15 builds for).
double double_at(const Spi& spi, std::uint64_t row, int col) {
    bool isnull = false;
    Datum d = spi.value(row, col, &isnull);
    return isnull ? 0.0 : DatumGetFloat8(d);
}

// An xid column.
std::uint32_t xid_at(const Spi& spi, std::uint64_t row, int col) {
    bool isnull = false;
    Datum d = spi.value(row, col, &isnull);
    return isnull ? InvalidTransactionId : DatumGetTransactionId(d);
}

// A capped count: $1 is the cap, `cutoff` (when not 0) the second parameter.
std::int64_t capped_count(Spi& spi, KeptPlan& plan, TimestampTz cutoff) {
    Datum values[2] = {Int64GetDatum(health::kCountCap), TimestampTzGetDatum(cutoff)};
    spi.run(plan, values, nullptr);
    return spi.int64_at(0, 1);
}

// now() (the transaction's start) minus `seconds`.
TimestampTz cutoff_before_now(double seconds) {
    TimestampTz now = GetCurrentTransactionStartTimestamp();
    return now - static_cast<TimestampTz>(seconds * USECS_PER_SEC);
}

// Seconds from `t` to now(), never negative.
double seconds_since(TimestampTz t) {
    double s = static_cast<double>(GetCurrentTransactionStartTimestamp() - t) / USECS_PER_SEC;
    return s > 0 ? s : 0;
}

}  // namespace

// The sessions from the backend status array (which has every backend's xid and xmin,
// whatever the caller may see of pg_stat_activity); the others through SQL.
std::vector<health::Holder> xmin_holders(Spi& spi) {
    std::vector<health::Holder> holders;
    std::uint32_t next = guard([] { return ReadNextTransactionId(); });
    int n = guard([] { return pgstat_fetch_stat_numbackends(); });
    for (int i = 1; i <= n; i++) {
        LocalPgBackendStatus* local = guard([i] { return compat::local_backend(i); });
        if (local == nullptr || local->backendStatus.st_procpid == MyProcPid) continue;
        std::int64_t xmin_age = TransactionIdIsNormal(local->backend_xmin) ? health::xid_age(next, local->backend_xmin) : -1;
        std::int64_t xid_age = TransactionIdIsNormal(local->backend_xid) ? health::xid_age(next, local->backend_xid) : -1;
        if (xmin_age < 0 && xid_age < 0) continue;
        const PgBackendStatus* b = &local->backendStatus;
        const char* user = guard([b] { return OidIsValid(b->st_userid) ? GetUserNameFromId(b->st_userid, true) : nullptr; });
        const char* type = guard([b] { return GetBackendTypeDesc(b->st_backendType); });
        const char* db = guard([b] { return OidIsValid(b->st_databaseid) ? get_database_name(b->st_databaseid) : nullptr; });
        health::Holder h{health::HolderKind::kSession, std::max(xmin_age, xid_age), std::nullopt, b->st_procpid,
                         user ? user : type, db ? db : "(none)", "", true, xid_age >= xmin_age};
        if (b->st_xact_start_timestamp != 0) h.age_seconds = seconds_since(b->st_xact_start_timestamp);
        holders.push_back(std::move(h));
    }
    std::uint64_t rows = spi.run(g_prepared, nullptr, nullptr);
    for (std::uint64_t r = 0; r < rows; r++)
        holders.push_back({health::HolderKind::kPreparedTransaction, health::xid_age(next, xid_at(spi, r, 2)),
                           double_at(spi, r, 5), 0, string_at(spi, r, 3), string_at(spi, r, 4), string_at(spi, r, 1),
                           false, true});
    rows = spi.run(g_slots, nullptr, nullptr);
    for (std::uint64_t r = 0; r < rows; r++)
        holders.push_back({health::HolderKind::kReplicationSlot, health::xid_age(next, xid_at(spi, r, 2)),
                           std::nullopt, 0, "", "", string_at(spi, r, 1), spi.bool_at(r, 3), false});
    return holders;
}

std::vector<health::TableRows> baton_tables(Spi& spi) {
    std::vector<health::TableRows> tables;
    std::uint64_t rows = spi.run(citus::pick(g_tables, g_tables_citus), nullptr, nullptr);
    for (std::uint64_t r = 0; r < rows; r++)
        tables.push_back({string_at(spi, r, 1), spi.int64_at(r, 2), spi.int64_at(r, 3), string_at(spi, r, 4)});
    return tables;
}

health::ExpiredLeases expired_leases(Spi& spi) {
    health::ExpiredLeases e{capped_count(spi, g_expired_count, 0), "", "", 0, 0};
    if (e.count > 0 && spi.run(g_expired_oldest, nullptr, nullptr) == 1) {
        e.tenant = string_at(spi, 0, 1);
        e.target = string_at(spi, 0, 2);
        e.id = spi.int64_at(0, 3);
        e.expired_seconds = double_at(spi, 0, 4);
    }
    return e;
}

// On a worker the count of expired leases over its own shards (see pg/citus/local_shards).
std::int64_t expired_here(Spi& spi, std::int64_t counted) {
    Datum values[1] = {Int64GetDatum(health::kCountCap)};
    std::uint64_t rows = 0;
    if (!local_shards::run_on_own_shards(spi, g_expired_count, values, {"leases", "deliveries"}, &rows))
        return counted;
    return rows == 0 ? 0 : spi.int64_at(0, 1);
}

health::StuckRuns stuck_runs(Spi& spi, double stuck_after_seconds) {
    TimestampTz cutoff = cutoff_before_now(stuck_after_seconds);
    health::StuckRuns s{capped_count(spi, g_stuck_count, cutoff), "", "", "", "", false, "", 0};
    Datum values[2] = {Int64GetDatum(1), TimestampTzGetDatum(cutoff)};
    if (s.count > 0 && spi.run(g_stuck_oldest, values, nullptr) == 1) {
        s.tenant = string_at(spi, 0, 1);
        s.run_id = string_at(spi, 0, 2);
        s.workflow = string_at(spi, 0, 3);
        s.owner = string_at(spi, 0, 4);
        s.lease_expired = spi.bool_at(0, 5);
        s.stage = string_at(spi, 0, 6);
        s.stuck_seconds = double_at(spi, 0, 7);
    }
    return s;
}

health::MarkersInDoubt markers_in_doubt(Spi& spi) {
    health::MarkersInDoubt m{capped_count(spi, g_in_doubt_count, 0), "", "", 0, 0, "", 0};
    if (m.count > 0 && spi.run(g_in_doubt_oldest, nullptr, nullptr) == 1) {
        m.tenant = string_at(spi, 0, 1);
        m.run_id = string_at(spi, 0, 2);
        m.entry_id = spi.int64_at(0, 3);
        m.position = spi.int32_at(0, 4);
        m.kind = string_at(spi, 0, 5);
        m.claimed_seconds = double_at(spi, 0, 6);
    }
    return m;
}

// On its index schedule_rows_due.
health::SchedulesBehind schedules_behind(Spi& spi, double warn_seconds) {
    health::SchedulesBehind s{0, "", "", 0};
    TimestampTz cutoff = cutoff_before_now(warn_seconds);
    s.count = capped_count(spi, g_behind_count, cutoff);
    Datum values[2] = {Int64GetDatum(1), TimestampTzGetDatum(cutoff)};
    if (s.count > 0 && spi.run(g_behind_oldest, values, nullptr) == 1) {
        s.tenant = string_at(spi, 0, 1);
        s.name = string_at(spi, 0, 2);
        s.late_seconds = double_at(spi, 0, 3);
    }
    return s;
}

health::Paused paused(Spi& spi) {
    health::Paused p{0, 0, "", "", 0};
    Datum values[1] = {Int64GetDatum(health::kCountCap)};
    if (spi.run(g_paused, values, nullptr) == 1) {
        p.bindings = spi.int64_at(0, 1);
        p.everywhere = spi.int64_at(0, 2);
        if (!spi.is_null(0, 3)) p.tenant = string_at(spi, 0, 3);
        p.target = string_at(spi, 0, 4);
        p.paused_seconds = double_at(spi, 0, 5);
    }
    return p;
}

health::WaitingOnLimits waiting_on_limits(Spi& spi) {
    health::WaitingOnLimits w{0, "", "", "", 0};
    Datum values[1] = {Int64GetDatum(health::kCountCap)};
    if (spi.run(g_waiting_on_limits, values, nullptr) == 1 && !spi.is_null(0, 2)) {
        w.count = spi.int64_at(0, 1);
        w.tenant = string_at(spi, 0, 2);
        w.target = string_at(spi, 0, 3);
        w.key = string_at(spi, 0, 4);
        w.waiting_seconds = double_at(spi, 0, 5);
    }
    return w;
}

health::OldestPending oldest_pending(Spi& spi) {
    health::OldestPending p{false, "", "", 0, 0};
    if (spi.run(g_oldest_pending, nullptr, nullptr) == 1) {
        p.any = true;
        p.tenant = string_at(spi, 0, 1);
        p.target = string_at(spi, 0, 2);
        p.id = spi.int64_at(0, 3);
        p.due_seconds = double_at(spi, 0, 4);
    }
    return p;
}

health::ReaperState reaper_state(std::int64_t expired_leases) {
    TimestampTz last = 0;
    TimestampTz* at = &last;
    bool preloaded = guard([at] { return launcher::last_reaped(MyDatabaseId, at); });
    const char* db = guard([] { return get_database_name(MyDatabaseId); });
    bool is_served = guard([db] { return served::serves(db); });
    health::ReaperState s{preloaded, is_served, db ? db : "", std::nullopt, seconds_since(PgStartTime),
                          settings::reaper_interval_ms / 1000.0, expired_leases};
    if (last != 0) s.since_run = seconds_since(last);
    return s;
}

void emit(ReturnSetInfo* rsinfo, const health::Check& check) {
    Datum values[5] = {text_datum(check.name), text_datum(health::status_name(check.status)),
                       Float8GetDatum(check.value), text_datum(check.detail), 0};
    bool nulls[5] = {false, false, false, false, check.hint.empty()};
    if (!check.hint.empty()) values[4] = text_datum(check.hint);
    put_row(rsinfo, values, nulls);
}

}  // namespace baton::pg::health_store
