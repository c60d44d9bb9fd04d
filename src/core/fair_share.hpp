// The fair claim's turns (baton.claim_fair, docs/guide/fairness.md): a worker serves the
// tenants that have work for a target one after another, in order of their id, each for
// as many items as its binding's weight, then passes to the next. Over a round every
// tenant with work has had its weight's worth, whatever the depth of its backlog.
// Pure logic over one plain struct: the server keeps one per (worker, target) and asks
// these functions how much the current tenant may take and whether its turn is over.
#pragma once

#ifdef POSTGRES_H
#error "core headers are included before postgres.hpp"
#endif

#include <cstdint>

namespace baton::fair_share {

// A binding's weight: items a turn gives its tenant.
constexpr std::int32_t kMinWeight = 1;
constexpr std::int32_t kMaxWeight = 10000;
// Refuses (22023) a weight outside [kMinWeight, kMaxWeight].
void check_weight(std::int64_t weight);

// A call visits at most this many tenants, those that give it nothing (no claimable row
// after all, a pause, a fence, a binding the caller may not serve) included: each one
// served holds its fence lock (an entry of the server's shared lock table) until the
// transaction ends. The next call goes on from there.
constexpr int kMaxVisits = 256;

// Where a worker stands in its round: whether it is serving a tenant, and how many
// items that tenant has had in this turn.
struct Turn {
    bool open = false;
    std::int64_t served = 0;
};

// Opens the turn of the next tenant.
void open(Turn& turn);
// How many of `wanted` items the open turn's tenant may take now: what is left of its
// weight, at least one; all of them when it is alone in the round (no other tenant has
// work to share with).
std::int64_t quota(const Turn& turn, std::int32_t weight, std::int64_t wanted, bool alone = false);
// After the tenant was asked for `asked` items and gave `got`: the turn closes when
// the tenant ran dry (got < asked) or had its weight.
void took(Turn& turn, std::int32_t weight, std::int64_t asked, std::int64_t got);
// Closes the turn without taking (a tenant the caller passes over).
void pass(Turn& turn);

}  // namespace baton::fair_share
