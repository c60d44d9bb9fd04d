// The arithmetic of a key's limit (baton.limit_key, baton.rate_limit_key; docs/guide/limits.md):
// when one more delivery of the key may be admitted into the claim order, and from when
// it may be claimed. Pure logic over one plain struct, the key's row of baton.key_slots,
// which the server reads and writes under the row's lock (pg/deliveries/key_admission).
//
// A key may cap how many of its deliveries are admitted at once (pending in the claim
// order, or leased: max_leased), admit one at a time in enqueue order (ordered), and
// pace its claims: at most `rate` per `per`, `burst` at once. The pace is a token
// bucket whose tokens are spent when a delivery is admitted, not when it is claimed:
// the admitted deliveries not yet claimed hold theirs, so tokens and unclaimed
// admissions together never exceed the burst, and a delivery admitted with no token
// left may be claimed only from the moment its token comes (its slot). So in any span
// of `per`, the claims of a key are at most rate + burst, however late the workers
// come, and no clock but the server's is read.
#pragma once

#ifdef POSTGRES_H
#error "core headers are included before postgres.hpp"
#endif

#include <cstdint>

namespace baton::key_limit {

constexpr std::int32_t kMaxCount = 1000000;  // max_leased, rate and burst: 1 to this
constexpr std::int64_t kMaxPerUsec = 86400LL * 1000000LL;  // per: longer than zero, at most a day

// Refusals (22023) of a value outside its bounds.
void check_max_leased(std::int64_t max_leased);
void check_rate(std::int64_t rate);
void check_burst(std::int64_t burst);
void check_per_usec(std::int64_t per_usec);

// A key's limit. 0 for max_leased or rate: that part does not apply.
struct Limit {
    std::int32_t max_leased = 0;
    bool ordered = false;
    std::int32_t rate = 0;
    std::int64_t per_usec = 0;
    std::int32_t burst = 0;
};

// A key's count: admitted (pending in the claim order, or leased), ready (admitted and
// not yet claimed), and the pace's bucket: tokens as of `at` (microseconds).
struct State {
    std::int32_t admitted = 0;
    std::int32_t ready = 0;
    double tokens = 0;
    std::int64_t at = 0;
};

// The state of a key that has none yet: a full bucket.
State fresh(const Limit& limit, std::int64_t now);

// The bucket brought to `now`: tokens added at rate per `per`, at most burst less the
// unclaimed admissions (which hold theirs).
void refill(const Limit& limit, State& state, std::int64_t now);

// True when one more delivery may be admitted: below max_leased (an ordered key: none
// admitted), and fewer unclaimed admissions than the burst.
bool has_room(const Limit& limit, const State& state);

// The slot of a delivery whose key is not paced: no moment before which it may not be
// claimed.
constexpr std::int64_t kNoSlot = INT64_MIN;

// Admits one delivery at `now` (has_room() first): counts it and, on a paced key, spends
// a token and returns its slot, the moment from which it may be claimed: `now` when a
// token was there, else when its token comes. kNoSlot when the key is not paced.
std::int64_t admit(const Limit& limit, State& state, std::int64_t now);

// An admitted delivery claimed at `now` (it no longer holds a token of the bucket: the
// bucket is brought to `now` first, so that it never counts time during which the
// unclaimed admissions held it full)...
void claimed(const Limit& limit, State& state, std::int64_t now);
// ...or one that leaves the admitted: finished, failed, cancelled, deleted, or given
// back for a retry or a reap on a paced key (which admits it afresh). was_ready: it was
// not claimed.
void left(const Limit& limit, State& state, bool was_ready, std::int64_t now);

// True when the state says nothing the key's next admission would not find anyway: no
// admission, and a full bucket. The server then drops the key's row.
bool idle(const Limit& limit, const State& state, std::int64_t now);

}  // namespace baton::key_limit
