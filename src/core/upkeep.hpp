// What a delivery's move writes beside its own row: which side rows change (baton.ready,
// baton.leases; pg/deliveries/side_rows.hpp) and what the claim hints are told
// (core/claim_hint.hpp), given the versions before and after a write. The one place of
// these rules: the fence trigger and the direct path both ask it
// (pg/deliveries/upkeep.hpp does what it answers).
#pragma once

#ifdef POSTGRES_H
#error "core headers are included before postgres.hpp"
#endif

#include <cstdint>
#include <string_view>

#include "core/delivery.hpp"

namespace baton::upkeep {

// A version of a delivery, as far as its side rows and claim hints see it.
struct Version {
    bool has_status;       // the status is one of the five (a NULL or unknown one: not)
    delivery::Status status;
    bool has_place;        // tenant, target, priority, id and run_after are all non-NULL
    std::string_view tenant;  // the tenant's 16 bytes
    std::string_view target;
    std::int64_t priority;
    std::int64_t id;
    std::int64_t run_after;  // microseconds
    bool has_lease;        // tenant, id, generation and lease_until are all non-NULL
    std::int64_t generation;
    std::int64_t lease_until;  // microseconds
    bool has_key;          // the delivery carries a key (a limit may hold it back)
    std::string_view key;
};

// True when the version has a ready row: pending, with its place in claim order known.
bool ready(const Version& v);
// True when the version holds a lease baton.leases lists: claimed, with a generation and
// a lease_until.
bool leased(const Version& v);

// What a write from `before` to `after` changes (nullptr: no version, the before of an
// insert or the after of a delete).
struct Changes {
    // before's ready row goes, and the claim hints learn the row was taken (pending again
    // should the transaction abort): it stopped being pending, or moved in claim order.
    bool leaves_ready;
    // after's ready row comes, and the claim hints learn the row is pending there: it
    // became pending, or moved in claim order (its tenant, target, priority, id,
    // run_after or key changed while pending).
    bool enters_ready;
    // after's lease goes into baton.leases: it is leased, and before did not hold that
    // very lease (the same generation and lease_until).
    bool adds_lease;
    // before's lease leaves baton.leases: it was leased, and after does not hold that very
    // lease (a finish, a retry, a cancel, a reap, a renew, a deletion). The write that
    // ends a lease removes its row, so that the reaper finds only leases that expired
    // while held.
    bool drops_lease;
};
Changes changes(const Version* before, const Version* after);

}  // namespace baton::upkeep
