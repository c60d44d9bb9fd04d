// age_pending: the bound on how long a delivery waits behind higher priorities
// (docs/guide/fairness.md, "Priorities and their bound").
#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "core/tenant.hpp"
#include "pg/runtime/args.hpp"
#include "pg/access/fence.hpp"
#include "pg/access/read_only.hpp"
#include "pg/citus/citus.hpp"
#include "pg/citus/local_shards.hpp"
#include "pg/runtime/settings.hpp"
#include "pg/runtime/spi.hpp"

namespace baton::api {

namespace {

// Up to $3 due pending deliveries (baton.ready), by the moment they became due, that
// have waited since before $1, from after $2: each with the highest priority pending in
// its tenant and target (the first entry of ready_pkey for the pair: one descent) and
// whether it is below it.
pg::KeptPlan g_candidates = {
    "SELECT o.tenant, o.id, o.run_after, (OPERATOR(pg_catalog.-) t.rank)::pg_catalog.int4, "
    "o.rank OPERATOR(pg_catalog.>) t.rank FROM (SELECT r.tenant, r.target, r.id, r.rank, r.run_after "
    "FROM baton.ready r WHERE r.run_after OPERATOR(pg_catalog.<) $1 AND r.run_after OPERATOR(pg_catalog.>) $2 "
    "ORDER BY r.run_after LIMIT $3) o "
    "CROSS JOIN LATERAL (SELECT y.rank FROM baton.ready y WHERE y.target OPERATOR(pg_catalog.=) o.target "
    "AND y.tenant OPERATOR(pg_catalog.=) o.tenant ORDER BY y.target, y.tenant, y.rank LIMIT 1) t ORDER BY o.run_after",
    3, {TIMESTAMPTZOID, TIMESTAMPTZOID, INT4OID}, nullptr};

// On the coordinator of a distributed install Citus cannot run g_candidates (a LATERAL
// over a subquery with a LIMIT): the candidates first, from every node, then each one's
// highest priority by a statement routed to its tenant's shard.
pg::KeptPlan g_candidates_only = {
    "SELECT r.tenant, r.target, r.id, r.rank, r.run_after FROM baton.ready r "
    "WHERE r.run_after OPERATOR(pg_catalog.<) $1 AND r.run_after OPERATOR(pg_catalog.>) $2 "
    "ORDER BY r.run_after LIMIT $3",
    3, {TIMESTAMPTZOID, TIMESTAMPTZOID, INT4OID}, nullptr};
pg::KeptPlan g_top = {
    "SELECT y.rank FROM baton.ready y WHERE y.tenant OPERATOR(pg_catalog.=) $1 AND y.target OPERATOR(pg_catalog.=) $2 "
    "ORDER BY y.target, y.tenant, y.rank LIMIT 1",
    2, {UUIDOID, TEXTOID}, nullptr};

// The raise, through the table's trigger like any write (the ready row moves, the claim
// hints are told). A delivery with a key waits in its key's order instead.
pg::KeptPlan g_raise = {
    "UPDATE baton.deliveries d SET priority = $3 WHERE d.tenant OPERATOR(pg_catalog.=) $1 "
    "AND d.id OPERATOR(pg_catalog.=) $2 AND d.status OPERATOR(pg_catalog.=) 'pending' "
    "AND d.priority OPERATOR(pg_catalog.<) $3 AND d.key IS NULL",
    3, {UUIDOID, INT8OID, INT4OID}, nullptr};

// Where this backend's next call looks from: the background reaper calls every round and
// goes through every delivery that waits too long, a batch a round, then starts over.
TimestampTz g_after = DT_NOBEGIN;

// A delivery looked at: behind when a higher priority is pending in its tenant and
// target, top (the highest); target and rank as the coordinator's candidates give them.
struct Candidate {
    pg_uuid_t tenant;
    std::int64_t id;
    std::int32_t top;
    bool behind;
    text* target;
    std::int64_t rank;
};

// baton.age_pending(max_rows): raises each due pending delivery without a key that has
// waited longer than baton.priority_aging behind higher priorities to the highest
// priority pending in its tenant and target, so that it is claimed before every
// delivery that became due after it there. Looks at up to max_rows deliveries a call,
// passes over tenants that are not active or whose fence is changing; returns how many
// it raised. The background reaper calls it each round.
Datum age_pending(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.age_pending");
    std::int32_t max_rows = pg::int32_arg(fcinfo, 0, "max_rows");
    delivery::check_reap_rows(max_rows);
    if (settings::priority_aging <= 0) PG_RETURN_INT32(0);
    TimestampTz before =
        GetCurrentTransactionStartTimestamp() - static_cast<TimestampTz>(settings::priority_aging) * USECS_PER_SEC;
    pg::Spi spi;
    Datum values[3] = {TimestampTzGetDatum(before), TimestampTzGetDatum(g_after), Int32GetDatum(max_rows)};
    // One statement on one node, and on a worker of a distributed install over its own
    // shards; on the coordinator, the candidates and then each one's highest priority.
    std::uint64_t n = 0;
    bool whole = pg::local_shards::run_on_own_shards(spi, g_candidates, values, {"ready"}, &n);
    if (!whole && !pg::citus::distributed()) {
        n = spi.run(g_candidates, values, nullptr);
        whole = true;
    }
    if (!whole) n = spi.run(g_candidates_only, values, nullptr);
    auto* rows = pg::guard([n] { return static_cast<Candidate*>(palloc0(sizeof(Candidate) * (n + 1))); });
    TimestampTz last = DT_NOBEGIN;
    for (std::uint64_t i = 0; i < n; i++) {
        bool isnull = false;
        Candidate& r = rows[i];
        r.tenant = *DatumGetUUIDP(spi.value(i, 1, &isnull));
        if (whole) {
            r.id = spi.int64_at(i, 2);
            last = DatumGetTimestampTz(spi.value(i, 3, &isnull));
            r.top = spi.int32_at(i, 4);
            r.behind = spi.bool_at(i, 5);
        } else {
            Datum target = spi.value(i, 2, &isnull);
            r.target = pg::guard([target] { return DatumGetTextPCopy(target); });
            r.id = spi.int64_at(i, 3);
            r.rank = spi.int64_at(i, 4);
            last = DatumGetTimestampTz(spi.value(i, 5, &isnull));
        }
    }
    for (std::uint64_t i = 0; !whole && i < n; i++) {
        Datum key[2] = {UUIDPGetDatum(&rows[i].tenant), PointerGetDatum(rows[i].target)};
        if (spi.run(g_top, key, nullptr) != 1) continue;
        std::int64_t top = spi.int64_at(0, 1);
        rows[i].behind = rows[i].rank > top;
        rows[i].top = static_cast<std::int32_t>(-top);
    }
    // Where the next call looks from; after a short batch, the end: the next call starts over.
    g_after = n > 0 && n == static_cast<std::uint64_t>(max_rows) ? last : DT_NOBEGIN;
    std::int32_t raised = 0;
    for (std::uint64_t i = 0; i < n; i++) {
        Candidate& c = rows[i];
        if (!c.behind || !pg::fence::try_writable(&c.tenant)) continue;
        Datum raise[3] = {UUIDPGetDatum(&c.tenant), Int64GetDatum(c.id), Int32GetDatum(c.top)};
        raised += static_cast<std::int32_t>(spi.run(g_raise, raise, nullptr));
    }
    PG_RETURN_INT32(raised);
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_age_pending, baton::api::age_pending)
