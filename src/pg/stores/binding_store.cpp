// The statements on target_bindings and paused_targets (see binding_store.hpp).
#include "pg/stores/binding_store.hpp"

namespace baton::pg::bindings {

namespace {

KeptPlan g_bind = {
    "INSERT INTO baton.target_bindings AS b (tenant, target, role) VALUES ($1, $2, $3) "
    "ON CONFLICT (tenant, target) DO UPDATE SET role = EXCLUDED.role",
    3, {UUIDOID, TEXTOID, REGROLEOID}, nullptr};
// A change writes only a binding it changes (under READ COMMITTED a concurrent change
// is waited for and the condition checked again on its result); g_bound tells an
// unchanged binding from a missing one.
#define BINDING_KEY "b.tenant OPERATOR(pg_catalog.=) $1 AND b.target OPERATOR(pg_catalog.=) $2"
// $4: now() for a pause, NULL for a resume (a parameter: Citus refuses a volatile
// function inside CASE of a distributed UPDATE).
KeptPlan g_set_paused = {
    "UPDATE baton.target_bindings b SET paused_at = $4 "
    "WHERE " BINDING_KEY " AND (b.paused_at IS NULL) OPERATOR(pg_catalog.=) $3",
    4, {UUIDOID, TEXTOID, BOOLOID, TIMESTAMPTZOID}, nullptr};
KeptPlan g_set_weight = {
    "UPDATE baton.target_bindings b SET weight = $3 WHERE " BINDING_KEY " AND b.weight OPERATOR(pg_catalog.<>) $3",
    3, {UUIDOID, TEXTOID, INT4OID}, nullptr};
KeptPlan g_set_key_limit = {
    "INSERT INTO baton.key_limits AS l (tenant, target, key, max_leased, ordered) SELECT $1, $2, $3, $4, $5 "
    "WHERE EXISTS (SELECT 1 FROM baton.target_bindings b WHERE " BINDING_KEY ") "
    "ON CONFLICT (tenant, target, key) DO UPDATE SET max_leased = EXCLUDED.max_leased, ordered = EXCLUDED.ordered "
    "WHERE l.max_leased IS NULL OR l.max_leased OPERATOR(pg_catalog.<>) EXCLUDED.max_leased "
    "OR l.ordered OPERATOR(pg_catalog.<>) EXCLUDED.ordered",
    5, {UUIDOID, TEXTOID, TEXTOID, INT4OID, BOOLOID}, nullptr};
KeptPlan g_set_key_rate = {
    "INSERT INTO baton.key_limits AS l (tenant, target, key, rate, per, burst) SELECT $1, $2, $3, $4, $5, $6 "
    "WHERE EXISTS (SELECT 1 FROM baton.target_bindings b WHERE " BINDING_KEY ") "
    "ON CONFLICT (tenant, target, key) DO UPDATE SET rate = EXCLUDED.rate, per = EXCLUDED.per, burst = EXCLUDED.burst "
    "WHERE l.rate IS NULL OR l.rate OPERATOR(pg_catalog.<>) EXCLUDED.rate "
    "OR l.per OPERATOR(pg_catalog.<>) EXCLUDED.per OR l.burst OPERATOR(pg_catalog.<>) EXCLUDED.burst",
    6, {UUIDOID, TEXTOID, TEXTOID, INT4OID, INTERVALOID, INT4OID}, nullptr};
KeptPlan g_remove_key_limit = {
    "DELETE FROM baton.key_limits l WHERE l.tenant OPERATOR(pg_catalog.=) $1 AND l.target OPERATOR(pg_catalog.=) $2 "
    "AND l.key OPERATOR(pg_catalog.=) $3",
    3, {UUIDOID, TEXTOID, TEXTOID}, nullptr};
KeptPlan g_bound = {"SELECT 1 FROM baton.target_bindings b WHERE " BINDING_KEY, 2, {UUIDOID, TEXTOID}, nullptr};
// A target is known when some tenant binds it or has a pending delivery of it.
KeptPlan g_known_target = {
    "SELECT EXISTS (SELECT 1 FROM baton.target_bindings b WHERE b.target OPERATOR(pg_catalog.=) $1) "
    "OR EXISTS (SELECT 1 FROM baton.ready r WHERE r.target OPERATOR(pg_catalog.=) $1)",
    1, {TEXTOID}, nullptr};
KeptPlan g_pause_everywhere = {
    "INSERT INTO baton.paused_targets (target) VALUES ($1) ON CONFLICT (target) DO NOTHING", 1, {TEXTOID}, nullptr};
KeptPlan g_resume_everywhere = {
    "DELETE FROM baton.paused_targets p WHERE p.target OPERATOR(pg_catalog.=) $1", 1, {TEXTOID}, nullptr};

}  // namespace

// An upsert on the binding's primary key.
void bind(Spi& spi, pg_uuid_t* tenant, text* target, Oid role) {
    Datum values[3] = {UUIDPGetDatum(tenant), PointerGetDatum(target), ObjectIdGetDatum(role)};
    spi.run(g_bind, values, nullptr);
}

namespace {

// kChanged when the update wrote a row, else whether the binding exists.
Change changed(Spi& spi, std::uint64_t written, const Datum* key) {
    if (written > 0) return Change::kChanged;
    return spi.run(g_bound, key, nullptr) > 0 ? Change::kAlready : Change::kUnbound;
}

}  // namespace

Change set_paused(Spi& spi, pg_uuid_t* tenant, text* target, bool paused) {
    Datum values[4] = {UUIDPGetDatum(tenant), PointerGetDatum(target), BoolGetDatum(paused),
                       TimestampTzGetDatum(GetCurrentTransactionStartTimestamp())};
    return changed(spi, spi.run(g_set_paused, values, paused ? "    " : "   n"), values);
}

Change set_weight(Spi& spi, pg_uuid_t* tenant, text* target, std::int32_t weight) {
    Datum values[3] = {UUIDPGetDatum(tenant), PointerGetDatum(target), Int32GetDatum(weight)};
    return changed(spi, spi.run(g_set_weight, values, nullptr), values);
}

Change set_key_limit(Spi& spi, pg_uuid_t* tenant, text* target, text* key, std::int32_t max_leased, bool ordered) {
    Datum values[5] = {UUIDPGetDatum(tenant), PointerGetDatum(target), PointerGetDatum(key), Int32GetDatum(max_leased),
                       BoolGetDatum(ordered)};
    return changed(spi, spi.run(max_leased > 0 ? g_set_key_limit : g_remove_key_limit, values, nullptr), values);
}

Change set_key_rate(Spi& spi, pg_uuid_t* tenant, text* target, text* key, std::int32_t rate, Interval* per,
                    std::int32_t burst) {
    Datum values[6] = {UUIDPGetDatum(tenant), PointerGetDatum(target), PointerGetDatum(key),
                       Int32GetDatum(rate),   IntervalPGetDatum(per),  Int32GetDatum(burst)};
    return changed(spi, spi.run(g_set_key_rate, values, nullptr), values);
}

Change set_paused_everywhere(Spi& spi, text* target, bool paused) {
    Datum values[1] = {PointerGetDatum(target)};
    if (paused) {
        spi.run(g_known_target, values, nullptr);
        if (!spi.bool_at(0, 1)) return Change::kUnbound;
    }
    return spi.run(paused ? g_pause_everywhere : g_resume_everywhere, values, nullptr) > 0 ? Change::kChanged
                                                                                           : Change::kAlready;
}

}  // namespace baton::pg::bindings
