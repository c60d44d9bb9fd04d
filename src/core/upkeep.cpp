// What a delivery's move writes beside its own row (see upkeep.hpp).
#include "core/upkeep.hpp"

namespace baton::upkeep {

bool ready(const Version& v) { return v.has_status && v.status == delivery::Status::kPending && v.has_place; }

bool leased(const Version& v) { return v.has_status && v.status == delivery::Status::kClaimed && v.has_lease; }

namespace {

// True when two leased versions hold the same lease: the row of baton.leases is the same.
bool same_lease(const Version& a, const Version& b) {
    return a.tenant == b.tenant && a.id == b.id && a.generation == b.generation && a.lease_until == b.lease_until;
}

// True when two ready versions sit at the same place in claim order, under the same key
// (whose limit decides whether the row is in that order at all).
bool same_place(const Version& a, const Version& b) {
    return a.tenant == b.tenant && a.target == b.target && a.priority == b.priority && a.id == b.id &&
           a.run_after == b.run_after && a.has_key == b.has_key && a.key == b.key;
}

}  // namespace

Changes changes(const Version* before, const Version* after) {
    bool was_ready = before != nullptr && ready(*before);
    bool is_ready = after != nullptr && ready(*after);
    bool moved = (was_ready || is_ready) && !(was_ready && is_ready && same_place(*before, *after));
    bool was_leased = before != nullptr && leased(*before);
    bool is_leased = after != nullptr && leased(*after);
    bool kept = was_leased && is_leased && same_lease(*before, *after);
    return {moved && was_ready, moved && is_ready, is_leased && !kept, was_leased && !kept};
}

}  // namespace baton::upkeep
