// The limits of keys (baton.key_limits): which pending deliveries of a limited key are
// admitted into the claim order (baton.ready) and which wait outside it
// (baton.key_waiting), and from when an admitted one may be claimed. Claims never see a
// waiting delivery, so every claim path (direct, by statement, fair) keeps the limit
// without a check of its own. The arithmetic is core/key_limit.hpp's.
//
// baton.key_slots holds each limited key's count and bucket. A delivery's write
// (pg/deliveries/upkeep.cpp) tells this module when a delivery of a limited key becomes
// pending (enter: it waits), is claimed (claimed: a paced key's bucket only), leaves the
// admitted (left: finish, failure, cancel, deletion) or, on a paced key, is given back by
// a retry or a reap (reenter: it waits again, for a token of its own). A renewal, and
// on a key that is not paced a claim, a retry or a reap, keeps the delivery where it is
// and touches nothing here.
//
// None of these takes the key's row of baton.key_slots: each notes what it owes the
// key, and the transaction settles it at its commit (or PREPARE). Slots freed on a key
// that is neither paced nor ordered go first to its next waiting deliveries that no
// other transaction holds, which take the freed places without the key's count moving;
// the rest is settled key after key in one order (tenant, target, key): each key's row
// locked until the commit, its counts moved, its waiting deliveries let into the claim
// order as far as it has room. So the count of one key moves one transaction at a time,
// two transactions that share keys never wait for each other in a cycle, and a delivery
// that enters a limited key is claimable once its transaction has committed and the key
// had room.
//
// set() admits the deliveries of every key a limit covers afresh when the limit is set,
// changed or removed (the trigger of baton.key_limits calls it, for limit_key, direct
// SQL and a restore's rows alike).
//
// Postgres calls only (SPI; errors are ereport's).
#pragma once

#include "core/key_limit.hpp"
// (core headers before Postgres headers)
#include "pg/runtime/postgres.hpp"

namespace baton::pg::key_admission {

// The limit of (tenant, target, key): the key's own, else the target's for every key
// (every).
struct Limit {
    bool limited;
    key_limit::Limit rule;
    bool every;
};
Limit find(const pg_uuid_t* tenant, const text* target, const text* key);

// A pending delivery of a limited key, as its place in the claim order.
struct Row {
    const pg_uuid_t* tenant;
    const text* target;
    const text* key;
    std::int32_t priority;
    std::int64_t id;
    TimestampTz run_after;
};

// Registers the transaction callbacks that settle what transactions owe their keys
// (from _PG_init).
void init();

// A delivery of the key that becomes pending (an enqueue, a redrive, direct SQL): it
// waits, and enters the claim order at the commit if the key has room.
void enter(const Row& row, const Limit& limit);

// A paced key's delivery leased by a claim (its token goes back to the bucket), or given
// back by a retry or a reap (it waits again, for a token of its own).
void claimed(const Row& row, const Limit& limit);
void reenter(const Row& row, const Limit& limit);

// A delivery leased without a claim (direct SQL): counted, whatever the limit.
void leased(const Row& row, const Limit& limit);

// A waiting delivery whose place changes: its row of baton.key_waiting written anew.
void wait(const Row& row, const Limit& limit);

// Removes the delivery's row of baton.key_waiting: true when it was waiting.
bool unwait(const pg_uuid_t* tenant, std::int64_t id);

// An admitted delivery of the key leaves (was_ready: it was not claimed): at the commit
// its slot goes to the next waiting ones.
void left(const Row& row, const Limit& limit, bool was_ready);

// The limit of (tenant, target, key) ('' for every key) set to `limit`, or removed
// (nullptr: a key's own limit gives way to the target's for every key, if any): every
// waiting delivery it covered enters baton.ready, then the deliveries of each covered
// key are admitted afresh, in the key's order, leased ones first.
void set(const pg_uuid_t* tenant, const text* target, const text* key, const Limit* limit);

}  // namespace baton::pg::key_admission
