// What a delivery's move writes beside its own row (see upkeep.hpp).
#include "core/upkeep.hpp"

namespace baton::upkeep {

bool ready(const Version& v) { return v.has_status && v.status == delivery::Status::kPending && v.has_place; }

bool leased(const Version& v) { return v.has_status && v.status == delivery::Status::kClaimed && v.has_lease; }

namespace {

// True when two ready versions sit at the same place in claim order.
bool same_place(const Version& a, const Version& b) {
    return a.tenant == b.tenant && a.target == b.target && a.priority == b.priority && a.id == b.id &&
           a.run_after == b.run_after;
}

}  // namespace

Changes changes(const Version* before, const Version* after) {
    bool was_ready = before != nullptr && ready(*before);
    bool is_ready = after != nullptr && ready(*after);
    bool moved = (was_ready || is_ready) && !(was_ready && is_ready && same_place(*before, *after));
    bool adds_lease = after != nullptr && leased(*after) &&
                      !(before != nullptr && leased(*before) && before->generation == after->generation &&
                        before->lease_until == after->lease_until);
    return {moved && was_ready, moved && is_ready, adds_lease};
}

}  // namespace baton::upkeep
