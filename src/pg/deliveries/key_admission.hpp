// The limits of keys (baton.key_limits): which pending deliveries of a limited key are
// admitted into the claim order (baton.ready) and which wait outside it
// (baton.key_waiting). A key limited to n has at most n deliveries admitted at once,
// pending in baton.ready or leased; an ordered key one, the oldest. Claims never see a
// waiting delivery, so every claim path (direct, by statement, fair, on Citus) keeps
// the limit without a check of its own.
//
// baton.key_slots counts each limited key's admitted deliveries. A delivery's write
// (pg/deliveries/upkeep.cpp) asks admit() when a delivery of the key becomes pending
// (enqueue, redrive) and release() when an admitted one stops being pending or leased
// (finish, failure, cancel, deletion); a claim, a renewal, a retry and a reap keep the
// delivery admitted and touch nothing here. Both lock the key's row of key_slots until
// the transaction ends, so the admissions of one key happen one transaction at a time;
// claims do not take it.
//
// set() rewrites the admission of every key a limit covers when the limit is set,
// changed or removed (the trigger of baton.key_limits calls it, for limit_key, direct
// SQL and a restore's rows alike).
//
// Postgres calls only (SPI; errors are ereport's).
#pragma once

#include <cstdint>

#include "pg/runtime/postgres.hpp"

namespace baton::pg::key_admission {

// The limit of (tenant, target, key): the key's own, else the target's for every key.
struct Limit {
    bool limited;
    std::int32_t max_leased;
    bool ordered;
};
Limit find(const pg_uuid_t* tenant, const text* target, const text* key);

// A delivery of the key that becomes pending: true when it is admitted (the caller
// writes its ready row), false when it waits (its row of baton.key_waiting written).
// `force`: admitted whatever the count (a delivery leased without a claim, by direct SQL).
bool admit(const pg_uuid_t* tenant, const text* target, const text* key, const Limit& limit, std::int32_t priority,
           std::int64_t id, TimestampTz run_after, bool force);

// A waiting delivery whose place changes: its row of baton.key_waiting written anew.
void wait(const pg_uuid_t* tenant, const text* target, const text* key, const Limit& limit, std::int32_t priority,
          std::int64_t id, TimestampTz run_after);

// Removes the delivery's row of baton.key_waiting: true when it was waiting.
bool unwait(const pg_uuid_t* tenant, std::int64_t id);

// An admitted delivery of the key leaves: its slot goes to the next waiting ones, which
// enter baton.ready (the claim hints and the target's listeners told).
void release(const pg_uuid_t* tenant, const text* target, const text* key, const Limit& limit);

// The limit of (tenant, target, key) ('' for every key) set to `limit`, or removed
// (nullptr: a key's own limit gives way to the target's for every key, if any): every
// waiting delivery it covered enters baton.ready, then the deliveries of each covered
// key are admitted afresh, in the key's order, leased ones first.
void set(const pg_uuid_t* tenant, const text* target, const text* key, const Limit* limit);

}  // namespace baton::pg::key_admission
