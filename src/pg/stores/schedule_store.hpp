// The statements of recurring schedules over baton.schedule_rows (the rows behind the
// view baton.schedules): writing and removing a tenant's schedule, and, for
// fire_schedules, finding the due rows by the index on next_fire_at, locking one
// without waiting, and advancing it after its slot is enqueued. Which slot is due and
// which comes next is src/core/schedule.hpp's.
#pragma once

#include <cstdint>
#include <optional>

#include "pg/runtime/spi.hpp"

namespace baton::pg::schedules {

// A schedule as baton.schedule writes it.
struct NewSchedule {
    pg_uuid_t* tenant;
    text* name;
    text* target;
    text* spec;
    text* time_zone;
    Jsonb* payload;
    Jsonb* binding;
    bool has_next;            // false: the spec has no slot after now (never due)
    TimestampTz next_fire_at;
};

// Creates the schedule, or replaces the one of that name: target, spec, time zone,
// payload and binding are the new ones; next_fire_at is the new one unless the spec and
// the time zone are unchanged (then the slot it was waiting for stays due); last_fired_at
// and last_delivery_id are kept. Returns the next_fire_at written (nullopt: none).
std::optional<TimestampTz> put(Spi& spi, const NewSchedule& s);

// Removes the schedule; false when the tenant has none of that name.
bool remove(Spi& spi, pg_uuid_t* tenant, text* name);

// A due schedule: its key (copied out of SPI memory).
struct DueKey {
    pg_uuid_t* tenant;
    text* name;
};

// Up to max_rows schedules of active tenants whose next_fire_at is at or before `now`,
// the longest due first, read through the index on next_fire_at; palloc'd, *n of them.
DueKey* due(Spi& spi, std::int32_t max_rows, TimestampTz now, std::uint64_t* n);

// A due schedule locked for firing (its values copied out of SPI memory).
struct Locked {
    text* target;
    text* spec;
    text* time_zone;
    Jsonb* payload;
    Jsonb* binding;
};

// Locks the schedule (FOR UPDATE SKIP LOCKED) when it is still due at `now`; false when
// another caller holds it, or it is gone or no longer due (advanced by a caller who
// committed meanwhile).
bool lock_due(Spi& spi, const DueKey& key, TimestampTz now, Locked* out);

// Records a fired slot: last_fired_at = slot, last_delivery_id, and the next slot
// (has_next false: none, the schedule is never due again).
void advance(Spi& spi, const DueKey& key, TimestampTz slot, std::int64_t delivery_id, bool has_next,
             TimestampTz next_fire_at);

// Sets only next_fire_at (has_next false: NULL, never due): for a row that has no slot
// due now, or whose stored spec or time zone can no longer be read.
void reschedule(Spi& spi, const DueKey& key, bool has_next, TimestampTz next_fire_at);

// The binding of a fired slot's delivery: the schedule's binding with
// cause = {"schedule": slot} (palloc'd).
Jsonb* binding_with_cause(Jsonb* binding, const char* slot);

}  // namespace baton::pg::schedules
