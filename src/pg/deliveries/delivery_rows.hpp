// The plain values the delivery store (delivery_store.hpp) and its two implementations
// (delivery_direct.hpp, delivery_statements.cpp) exchange: a delivery to add, what a call
// found, one claim call and what a range of it took.
#pragma once

#include <cstdint>

#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "pg/runtime/postgres.hpp"

namespace baton::pg {

// A delivery to enqueue, as plain Postgres values (from arguments or a batch item).
struct NewDelivery {
    text* target;
    text* dedup_key;
    Jsonb* payload;
    Jsonb* binding;
    bool has_run_after;
    TimestampTz run_after;
    std::int32_t priority;
    std::int32_t max_attempts;
    pg_uuid_t* run_id;  // nullptr: no run
    text* key;          // nullptr: no key
};

// What one insert attempt of an enqueue met.
struct Added {
    enum Outcome { kInserted, kExisting, kNeither } outcome;  // kNeither: the key's row vanished
    std::int64_t id;
    bool same;  // kExisting: it carries the same payload and binding
};

// A delivery as a call found it, after its write when it wrote one.
struct FoundDelivery {
    bool found;               // false: no such delivery (visible to the call)
    delivery::Row row;
    const char* target;       // NUL-terminated; valid while the store is open
    Oid role;                 // bound to the target; InvalidOid when unbound
    TimestampTz lease_until;  // renew: the lease as the row holds it
};

// The part of a target's pending rows a claim scans, in claim order (baton.ready's
// primary key): all of a target, the
// rest of a priority level from a position, or the levels below a priority.
enum class ClaimRange { kAll, kLevel, kBelow };

// One claim call: its arguments and where its rows go.
struct ClaimCall {
    pg_uuid_t* tenant;
    text* target;
    Interval* lease;
    Jsonb* expected;       // nullptr: no filter
    TimestampTz now;       // the clock run_after is compared with (claim_hints::begin)
    ReturnSetInfo* rsinfo;  // the claimed rows are appended here, in claim order
    bool with_tenant;       // each row begins with the tenant (baton.claim_fair's rows)
};

// The claim's columns of one claimed row (id, generation, lease_until, dedup_key,
// payload, binding, attempt, run_id) appended to call.rsinfo, after the tenant's when
// call.with_tenant.
constexpr int kClaimColumns = 8;
void put_claimed(const ClaimCall& call, const Datum* values, const bool* nulls);

// What one range of a claim took: how many rows, and the position of the last (kEnd for none).
struct Claimed {
    std::int64_t n;
    claim_hint::Position last;
};

}  // namespace baton::pg
