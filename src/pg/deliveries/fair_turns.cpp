// The backend's places in the fair claim's rounds (see fair_turns.hpp).
#include <cstring>

#include "pg/deliveries/fair_turns.hpp"
#include "pg/runtime/boundary.hpp"
#include "pg/runtime/cache.hpp"

namespace baton::pg::fair_turns {

namespace {

// The key's "tenant" holds the calling role's oid (the rest zero): the same layout as
// the caches of (tenant, target), hashed and compared up to the target's length.
using Key = cache::TenantTarget<256>;
// Never forgotten by an invalidation: a place names a tenant, which a later call checks
// again. At the cap the table empties (a backend serving more targets starts over).
cache::Map<Key, Place, Key> g_places{"pg_baton fair claim places", 256, cache::Forgets::kNothing};

}  // namespace

Place* place(Oid role, const char* target, int target_len) {
    pg_uuid_t who{};
    std::memcpy(&who, &role, sizeof role);
    Key key;
    if (!Key::make(&key, &who, target, target_len)) return nullptr;
    if (Place* p = g_places.find(key)) return p;
    return guard([&key] { return g_places.enter(key); });
}

}  // namespace baton::pg::fair_turns
