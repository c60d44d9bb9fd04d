// Recurring schedules: baton.schedule, baton.unschedule and baton.fire_schedules.
//
// A schedule enqueues a delivery for each slot of its spec (src/core/schedule.hpp; the
// spec read in the schedule's time zone through pg/runtime/time_zone). fire_schedules finds the
// due rows by the index on next_fire_at, locks each without waiting, enqueues the latest
// slot at or before now with the dedup key "schedule:<name>:<slot>" and advances the row
// in the same transaction: a slot is enqueued once, whoever fires it and however often,
// and after a pause only the latest slot missed fires.
#include <cstdint>
#include <optional>
#include <string>

#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/schedule.hpp"
#include "core/tenant.hpp"
#include "pg/runtime/args.hpp"
#include "pg/citus/citus_hold.hpp"
#include "pg/deliveries/delivery_store.hpp"
#include "pg/access/fence.hpp"
#include "pg/runtime/notify.hpp"
#include "pg/access/read_only.hpp"
#include "pg/stores/schedule_store.hpp"
#include "pg/runtime/time_zone.hpp"

namespace baton::api {

namespace {

// The max_attempts of a fired delivery: enqueue's default.
constexpr std::int32_t kFiredMaxAttempts = 3;

// The transaction's start (now()) in the core's microseconds since 1970.
std::int64_t now_usec() { return pg::time_zone::unix_usec(GetCurrentTransactionStartTimestamp()); }

// The zone a time zone name denotes, or nullptr when Postgres knows none.
const pg_tz* zone_of(const text* time_zone) {
    const char* name = pg::guard([time_zone] { return text_to_cstring(time_zone); });
    return pg::time_zone::find(name);
}

// The time_zone argument: a name Postgres knows (22023 naming the argument otherwise).
const pg_tz* zone_arg(const text* time_zone) {
    const pg_tz* tz = pg::text_view(time_zone).size() <= TZ_STRLEN_MAX ? zone_of(time_zone) : nullptr;
    if (tz == nullptr)
        throw_invalid_argument("time_zone", "time_zone \"" + clip(pg::text_view(time_zone)) + "\"" +
                                                " is not a time zone Postgres knows; the view "
                                                "pg_timezone_names lists them ('UTC', 'Europe/Berlin', ...).");
    return tz;
}

// The binding argument: as enqueue's, and without a cause (each fired delivery's cause
// is the slot it fires: {"schedule": "<slot>"}).
void check_schedule_binding(const Jsonb* binding) {
    pg::check_binding(binding);
    if (pg::jsonb_has_key(binding, "cause"))
        throw_invalid_argument("binding", "binding.cause is set by fire_schedules on each delivery, to "
                                          "{\"schedule\": \"<slot>\"}; a schedule's binding has no cause.");
}

// baton.schedule(tenant, name, target, spec, payload, binding, time_zone): creates the
// schedule `name` of the tenant or replaces it (schedules::put says what a replace keeps);
// its next_fire_at is the first slot after now. Returns the next_fire_at it has (NULL:
// none).
Datum schedule(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.schedule");
    pg::schedules::NewSchedule s{};
    s.tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    s.name = pg::text_arg(fcinfo, 1, "name");
    s.target = pg::text_arg(fcinfo, 2, "target");
    s.spec = pg::text_arg(fcinfo, 3, "spec");
    s.payload = pg::jsonb_arg(fcinfo, 4, "payload");
    s.binding = pg::jsonb_arg(fcinfo, 5, "binding");
    s.time_zone = pg::text_arg(fcinfo, 6, "time_zone");
    check_label("name", pg::text_chars(s.name));
    delivery::check_target_chars(pg::text_chars(s.target));
    const schedule::Spec spec = schedule::parse(pg::text_view(s.spec));
    const pg_tz* tz = zone_arg(s.time_zone);
    pg::check_object_argument("payload", s.payload);
    check_schedule_binding(s.binding);
    pg::fence::require_writable(s.tenant);
    const std::optional<std::int64_t> next = schedule::next_slot(spec, pg::time_zone::PgZone(tz), now_usec());
    s.has_next = next.has_value();
    s.next_fire_at = next ? pg::time_zone::timestamptz(*next) : 0;
    pg::Spi spi;
    const std::optional<TimestampTz> next_fire_at = pg::schedules::put(spi, s);
    if (!next_fire_at) PG_RETURN_NULL();
    PG_RETURN_TIMESTAMPTZ(*next_fire_at);
}

// baton.unschedule(tenant, name): removes the schedule; false when there was none.
Datum unschedule(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.unschedule");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    text* name = pg::text_arg(fcinfo, 1, "name");
    check_label("name", pg::text_chars(name));
    pg::fence::require_writable(tenant);
    pg::Spi spi;
    PG_RETURN_BOOL(pg::schedules::remove(spi, tenant, name));
}

// Enqueues the slot's delivery, idempotent on its dedup key: returns its id and whether
// this call inserted it (false: the slot's delivery was there already).
std::int64_t enqueue_slot(pg::DeliveryStore& store, const pg::schedules::DueKey& key,
                          const pg::schedules::Locked& row, std::int64_t slot, bool* inserted) {
    const std::string slot_text = schedule::format_utc(slot);
    const std::string dedup_key = schedule::dedup_key(pg::text_view(key.name), slot);
    pg::NewDelivery d{};
    d.target = row.target;
    d.dedup_key = DatumGetTextPP(pg::text_datum(dedup_key));
    d.payload = row.payload;
    d.binding = pg::schedules::binding_with_cause(row.binding, slot_text.c_str());
    d.priority = 0;
    d.max_attempts = kFiredMaxAttempts;
    // A concurrent producer's row can vanish between the insert and the look-up only if
    // it is removed at that moment; then the insert is tried once more (as enqueue does).
    for (int tries = 0; tries < 3; tries++) {
        pg::Added added = store.add(key.tenant, d);
        if (added.outcome == pg::Added::kNeither) continue;
        *inserted = added.outcome == pg::Added::kInserted;
        if (*inserted) pg::notify::enqueued(key.tenant, row.target);
        return added.id;
    }
    throw Error(SqlState::kInternal, "fire_schedules could neither insert nor find the delivery with dedup key " +
                                         pg::quoted(d.dedup_key) + " of target " + pg::quoted(row.target));
}

// Stops a locked row whose stored spec or time zone can no longer be read (written by
// direct SQL, or a zone gone from the server's time zone data): a WARNING, and
// next_fire_at NULL, so that it neither fails every call nor keeps coming back.
void stop_unreadable(pg::Spi& spi, const pg::schedules::DueKey& key, const std::string& why) {
    const std::string name = pg::quoted(key.name);
    const char* tenant = pg::tenant_text(key.tenant);
    const char* n = name.c_str();
    const char* w = why.c_str();
    pg::guard([tenant, n, w] {
        ereport(WARNING, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                          errmsg("schedule %s of tenant %s cannot be read; it fires no more", n, tenant),
                          errdetail_internal("%s", w),
                          errhint("Replace it with baton.schedule(), or remove it with baton.unschedule().")));
    });
    pg::schedules::reschedule(spi, key, false, 0);
}

// Fires one locked, due schedule: the latest slot at or before now is enqueued and
// next_fire_at moves to the first slot after now. Returns whether a delivery was inserted.
bool fire_one(pg::Spi& spi, pg::DeliveryStore& store, const pg::schedules::DueKey& key,
              const pg::schedules::Locked& row, std::int64_t now) {
    schedule::Spec spec;
    try {
        spec = schedule::parse(pg::text_view(row.spec));
    } catch (const Error& e) {
        stop_unreadable(spi, key, "Its spec: " + e.detail());
        return false;
    }
    const pg_tz* tz = zone_of(row.time_zone);
    if (tz == nullptr) {
        stop_unreadable(spi, key, "Its time zone " + pg::quoted(row.time_zone) + " is not known to the server.");
        return false;
    }
    const pg::time_zone::PgZone zone(tz);
    const std::optional<std::int64_t> slot = schedule::latest_slot_at_or_before(spec, zone, now);
    const std::optional<std::int64_t> next = schedule::next_slot(spec, zone, now);
    const TimestampTz next_at = next ? pg::time_zone::timestamptz(*next) : 0;
    if (!slot) {
        pg::schedules::reschedule(spi, key, next.has_value(), next_at);
        return false;
    }
    bool inserted = false;
    std::int64_t id = enqueue_slot(store, key, row, *slot, &inserted);
    pg::schedules::advance(spi, key, pg::time_zone::timestamptz(*slot), id, next.has_value(), next_at);
    return inserted;
}

// baton.fire_schedules(max_rows): enqueues the due slot of up to max_rows due schedules
// fleet-wide, the longest due first, and returns how many deliveries it enqueued. Rows
// another caller holds are skipped (SKIP LOCKED), and so are tenants that are not active
// or whose fence is changing right now (fence::try_writable): their slots stay due.
Datum fire_schedules(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.fire_schedules");
    std::int32_t max_rows = pg::int32_arg(fcinfo, 0, "max_rows");
    delivery::check_reap_rows(max_rows);
    const TimestampTz now = GetCurrentTransactionStartTimestamp();
    pg::Spi spi;
    std::uint64_t n = 0;
    pg::schedules::DueKey* due = pg::schedules::due(spi, max_rows, now, &n);
    pg::DeliveryStore store;
    std::int32_t fired = 0;
    for (std::uint64_t i = 0; i < n; i++) {
        pg::citus::hold_shard_group(due[i].tenant);  // the row locked below stays where it is
        if (!pg::fence::try_writable(due[i].tenant)) continue;
        pg::schedules::Locked row{};
        if (!pg::schedules::lock_due(spi, due[i], now, &row)) continue;
        if (fire_one(spi, store, due[i], row, pg::time_zone::unix_usec(now))) fired++;
    }
    PG_RETURN_INT32(fired);
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_schedule, baton::api::schedule)
BATON_FUNCTION(baton_unschedule, baton::api::unschedule)
BATON_FUNCTION(baton_fire_schedules, baton::api::fire_schedules)
