// One tenant's claim of a target, as baton.claim and baton.claim_fair make it: from the
// claim hint's position (pg/deliveries/claim_hints.hpp) when there is one, the rest of
// its priority level and then the levels below; from the top of the claim order when
// that finds fewer rows than asked for (once a second per target at most, so a hint
// never hides a row for long) or there is no hint.
#pragma once

#include <cstdint>

#include "pg/deliveries/delivery_store.hpp"

namespace baton::pg {

// Claims up to max_items rows of (call.tenant, target) into call.rsinfo; returns how
// many. use_hint: false for a claim filtered by `expected` (it passes over rows others
// may claim) and on a Citus install unless the call is served from its tenant's shards
// on this node (pg/citus/local_group.hpp: the rows' writes are told to the hints of the
// node that holds their shard). Sets call.now.
std::int64_t claim_take(DeliveryStore& store, ClaimCall& call, const char* target, int target_len,
                        std::int64_t max_items, bool use_hint);

}  // namespace baton::pg
