// The statements of recurring schedules (see schedule_store.hpp).
#include "pg/citus/local_shards.hpp"
#include "pg/stores/schedule_store.hpp"

namespace baton::pg::schedules {

namespace {

// A replace keeps the slot the schedule waits for when the spec and the time zone are
// the same text as before, so that a caller that declares its schedules at every start
// does not lose a slot that came due while it was down.
KeptPlan g_put = {
    "INSERT INTO baton.schedule_rows AS s "
    "(tenant, name, target, spec, time_zone, payload, binding, next_fire_at) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8) "
    "ON CONFLICT (tenant, name) DO UPDATE SET target = EXCLUDED.target, spec = EXCLUDED.spec, "
    "time_zone = EXCLUDED.time_zone, payload = EXCLUDED.payload, binding = EXCLUDED.binding, "
    "next_fire_at = CASE WHEN s.spec OPERATOR(pg_catalog.=) EXCLUDED.spec "
    "AND s.time_zone OPERATOR(pg_catalog.=) EXCLUDED.time_zone THEN s.next_fire_at ELSE EXCLUDED.next_fire_at END, "
    "updated_at = $9 RETURNING s.next_fire_at",
    9, {UUIDOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, JSONBOID, TIMESTAMPTZOID, TIMESTAMPTZOID}, nullptr};

KeptPlan g_remove = {
    "DELETE FROM baton.schedule_rows s WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.name OPERATOR(pg_catalog.=) $2",
    2, {UUIDOID, TEXTOID}, nullptr};

// The due rows of active tenants, the longest due first: a range scan of
// schedule_rows_due up to $2 (no row that is not due is read), each row's tenant
// probed. A fenced tenant's rows never hide the others' (they are skipped here, not
// after the LIMIT).
KeptPlan g_due = {
    "SELECT s.tenant, s.name FROM baton.schedule_rows s "
    "JOIN baton.tenants t ON t.tenant OPERATOR(pg_catalog.=) s.tenant "
    "WHERE t.state OPERATOR(pg_catalog.=) 'active' AND s.next_fire_at OPERATOR(pg_catalog.<=) $2 "
    "ORDER BY s.next_fire_at LIMIT $1",
    2, {INT4OID, TIMESTAMPTZOID}, nullptr};

// One row by its primary key, locked unless another caller holds it; the due test is
// evaluated again on the latest version when a caller advanced it meanwhile.
KeptPlan g_lock = {
    "SELECT s.target, s.spec, s.time_zone, s.payload, s.binding FROM baton.schedule_rows s "
    "WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.name OPERATOR(pg_catalog.=) $2 "
    "AND s.next_fire_at OPERATOR(pg_catalog.<=) $3 FOR UPDATE SKIP LOCKED",
    3, {UUIDOID, TEXTOID, TIMESTAMPTZOID}, nullptr};

KeptPlan g_advance = {
    "UPDATE baton.schedule_rows s SET last_fired_at = $3, last_delivery_id = $4, next_fire_at = $5 "
    "WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.name OPERATOR(pg_catalog.=) $2",
    5, {UUIDOID, TEXTOID, TIMESTAMPTZOID, INT8OID, TIMESTAMPTZOID}, nullptr};

// A by-reference column copied out of SPI memory, detoasted (a long value may be
// stored out of line).
text* text_at(Spi& spi, std::uint64_t row, int col) {
    bool isnull = false;
    Datum d = spi.copy_out(row, col, &isnull);
    return guard([d] { return DatumGetTextPP(d); });
}
Jsonb* jsonb_at(Spi& spi, std::uint64_t row, int col) {
    bool isnull = false;
    Datum d = spi.copy_out(row, col, &isnull);
    return guard([d] { return DatumGetJsonbP(d); });
}

KeptPlan g_reschedule = {
    "UPDATE baton.schedule_rows s SET next_fire_at = $3 "
    "WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.name OPERATOR(pg_catalog.=) $2",
    3, {UUIDOID, TEXTOID, TIMESTAMPTZOID}, nullptr};

}  // namespace

// One upsert; updated_at is the transaction's start, as now() would give.
std::optional<TimestampTz> put(Spi& spi, const NewSchedule& s) {
    Datum values[9] = {UUIDPGetDatum(s.tenant),     PointerGetDatum(s.name),      PointerGetDatum(s.target),
                       PointerGetDatum(s.spec),     PointerGetDatum(s.time_zone), JsonbPGetDatum(s.payload),
                       JsonbPGetDatum(s.binding),   TimestampTzGetDatum(s.next_fire_at),
                       TimestampTzGetDatum(GetCurrentTransactionStartTimestamp())};
    char nulls[10] = "         ";
    if (!s.has_next) nulls[7] = 'n';
    spi.run(g_put, values, nulls);
    bool isnull = false;
    Datum next = spi.value(0, 1, &isnull);
    if (isnull) return std::nullopt;
    return DatumGetTimestampTz(next);
}

bool remove(Spi& spi, pg_uuid_t* tenant, text* name) {
    Datum values[2] = {UUIDPGetDatum(tenant), PointerGetDatum(name)};
    return spi.run(g_remove, values, nullptr) > 0;
}

// Copied out at once: the firing of each row runs statements of its own. On a worker
// of a distributed install its own shards' rows only, read directly (each node's reaper
// fires its own tenants' schedules; a worker has Citus' metadata, and the distributed
// tables would give it the whole cluster's, as reap's candidates); elsewhere, on the
// coordinator too, the distributed tables'.
DueKey* due(Spi& spi, std::int32_t max_rows, TimestampTz now, std::uint64_t* n) {
    Datum values[2] = {Int32GetDatum(max_rows), TimestampTzGetDatum(now)};
    std::uint64_t found = 0;
    if (!local_shards::run_on_own_shards(spi, g_due, values, {"schedule_rows", "tenants"}, &found))
        found = spi.run(g_due, values, nullptr);
    DueKey* out = guard([found] { return static_cast<DueKey*>(palloc0(sizeof(DueKey) * (found + 1))); });
    for (std::uint64_t i = 0; i < found; i++) {
        bool isnull = false;
        out[i].tenant = DatumGetUUIDP(spi.copy_out(i, 1, &isnull));
        out[i].name = text_at(spi, i, 2);
    }
    *n = found;
    return out;
}

bool lock_due(Spi& spi, const DueKey& key, TimestampTz now, Locked* out) {
    Datum values[3] = {UUIDPGetDatum(key.tenant), PointerGetDatum(key.name), TimestampTzGetDatum(now)};
    if (spi.run(g_lock, values, nullptr) == 0) return false;
    out->target = text_at(spi, 0, 1);
    out->spec = text_at(spi, 0, 2);
    out->time_zone = text_at(spi, 0, 3);
    out->payload = jsonb_at(spi, 0, 4);
    out->binding = jsonb_at(spi, 0, 5);
    return true;
}

void advance(Spi& spi, const DueKey& key, TimestampTz slot, std::int64_t delivery_id, bool has_next,
             TimestampTz next_fire_at) {
    Datum values[5] = {UUIDPGetDatum(key.tenant), PointerGetDatum(key.name), TimestampTzGetDatum(slot),
                       Int64GetDatum(delivery_id), TimestampTzGetDatum(next_fire_at)};
    char nulls[6] = "     ";
    if (!has_next) nulls[4] = 'n';
    spi.run(g_advance, values, nulls);
}

void reschedule(Spi& spi, const DueKey& key, bool has_next, TimestampTz next_fire_at) {
    Datum values[3] = {UUIDPGetDatum(key.tenant), PointerGetDatum(key.name), TimestampTzGetDatum(next_fire_at)};
    char nulls[4] = "   ";
    if (!has_next) nulls[2] = 'n';
    spi.run(g_reschedule, values, nulls);
}

// The cause object is built by jsonb's own input function (the slot is ISO 8601 text,
// nothing to escape) and set over the binding by jsonb's || (a binding of a schedule
// has no cause of its own: baton.schedule refuses one).
Jsonb* binding_with_cause(Jsonb* binding, const char* slot) {
    return guard([binding, slot] {
        char* json = psprintf("{\"cause\": {\"schedule\": \"%s\"}}", slot);
        Datum cause = DirectFunctionCall1(jsonb_in, CStringGetDatum(json));
        return DatumGetJsonbP(DirectFunctionCall2(jsonb_concat, JsonbPGetDatum(binding), cause));
    });
}

}  // namespace baton::pg::schedules
