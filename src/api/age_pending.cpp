// age_pending: the bound on how long a delivery waits behind higher priorities
// (docs/fairness.md, "Priorities and their bound").
#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "core/tenant.hpp"
#include "pg/runtime/args.hpp"
#include "pg/access/fence.hpp"
#include "pg/access/read_only.hpp"
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

struct Candidate {
    pg_uuid_t tenant;
    std::int64_t id;
    std::int32_t top;
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
    std::uint64_t n = spi.run(g_candidates, values, nullptr);
    Candidate* behind = pg::guard([n] { return static_cast<Candidate*>(palloc(sizeof(Candidate) * (n + 1))); });
    std::uint64_t k = 0;
    for (std::uint64_t i = 0; i < n; i++) {
        if (!spi.bool_at(i, 5)) continue;
        bool isnull = false;
        behind[k] = {*DatumGetUUIDP(spi.value(i, 1, &isnull)), spi.int64_at(i, 2), spi.int32_at(i, 4)};
        k++;
    }
    if (n > 0 && n == static_cast<std::uint64_t>(max_rows)) {
        bool isnull = false;
        g_after = DatumGetTimestampTz(spi.value(n - 1, 3, &isnull));
    } else {
        g_after = DT_NOBEGIN;  // the end: the next call starts over
    }
    std::int32_t raised = 0;
    for (std::uint64_t i = 0; i < k; i++) {
        if (!pg::fence::try_writable(&behind[i].tenant)) continue;
        Datum raise[3] = {UUIDPGetDatum(&behind[i].tenant), Int64GetDatum(behind[i].id), Int32GetDatum(behind[i].top)};
        raised += static_cast<std::int32_t>(spi.run(g_raise, raise, nullptr));
    }
    PG_RETURN_INT32(raised);
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_age_pending, baton::api::age_pending)
