// The chain order of a run's stages, for run_history: from the one stage without a
// predecessor, each next stage is the one whose predecessor_id names the previous stage.
// Order never comes from timestamps or ids; a chain that is not exactly one unbroken line
// through every stage is DU004.
#pragma once
#ifdef POSTGRES_H
#error "core headers are included before postgres.h (its macros rename libc functions)"
#endif

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace baton::chain {

// One saved stage: its id and its predecessor_id (when has_predecessor; else SQL NULL).
struct Link {
    std::int64_t id;
    std::int64_t predecessor;
    bool has_predecessor;
};

// The indexes of links in chain order, root first. Empty input gives an empty order (a
// run that has not started). Throws baton::Error DU004 "history of run <run_id> is corrupt", with
// a detail naming the stage ids, when two stages share an id, a predecessor is not a stage
// of the set, two stages name the same predecessor, there is no root or more than one, or
// some stages are not reachable from the root (they then form a cycle). O(n) expected time.
std::vector<std::size_t> chain_order(const std::vector<Link>& links, std::string_view run_id);

}  // namespace baton::chain
