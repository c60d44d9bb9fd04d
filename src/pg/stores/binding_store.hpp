// The statements on baton.target_bindings, baton.paused_targets and baton.key_limits: a
// binding's role, its weight in the fair claim, its pause and the limits of its keys,
// and the targets paused in every tenant.
// Claims read them through the delivery store (DeliveryStore::binding(), kept by
// pg/access/authz_cache); every write here fires the tables' trigger, which makes every
// backend forget the bindings it knows at the writer's commit.
#pragma once

#include <cstdint>

#include "pg/runtime/spi.hpp"

namespace baton::pg::bindings {

// Binds (tenant, target) to role, replacing an earlier binding's role (its weight and
// pause stay).
void bind(Spi& spi, pg_uuid_t* tenant, text* target, Oid role);

// What a change found: it changed something, it was so already, or the binding (for a
// pause everywhere: the target, bound nowhere and with nothing pending) does not exist.
enum class Change { kChanged, kAlready, kUnbound };

// Pauses (paused) or resumes the binding of (tenant, target).
Change set_paused(Spi& spi, pg_uuid_t* tenant, text* target, bool paused);
// Sets the binding's weight.
Change set_weight(Spi& spi, pg_uuid_t* tenant, text* target, std::int32_t weight);
// Sets the limit of key ('' for every key) of the binding: at most max_leased admitted
// at once, one at a time in enqueue order when ordered (its pace, if any, stays);
// max_leased 0 removes every limit of the key. The
// table's trigger admits the deliveries of the keys it covers afresh
// (pg/deliveries/key_admission.hpp).
Change set_key_limit(Spi& spi, pg_uuid_t* tenant, text* target, text* key, std::int32_t max_leased, bool ordered);
// Paces the claims of key ('' for every key) of the binding: at most rate per `per`,
// burst at once (its concurrency limit, if any, stays).
Change set_key_rate(Spi& spi, pg_uuid_t* tenant, text* target, text* key, std::int32_t rate, Interval* per,
                    std::int32_t burst);
// Pauses (paused) or resumes target in every tenant.
Change set_paused_everywhere(Spi& spi, text* target, bool paused);

}  // namespace baton::pg::bindings
