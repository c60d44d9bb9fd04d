// Chain order of a run's stages (see chain.hpp).
#include "core/chain.hpp"

#include <string>
#include <unordered_map>
#include <utility>

#include "core/error.hpp"

namespace baton::chain {

namespace {

// Refuses the run's history with a detail naming the fault.
[[noreturn]] void corrupt(std::string_view run_id, std::string detail) {
    throw Error(SqlState::kCorruptHistory, "history of run " + std::string(run_id) + " is corrupt", std::move(detail));
}

// A stage id for a detail.
std::string id_text(std::int64_t id) {
    return std::to_string(id);
}

}  // namespace

// Indexes the stages by id and by predecessor (refusing repeats of either), finds the one
// root, then follows successors from it; whatever the walk misses lies on a cycle.
std::vector<std::size_t> chain_order(const std::vector<Link>& links, std::string_view run_id) {
    const std::size_t n = links.size();
    if (n == 0)
        return {};

    std::unordered_map<std::int64_t, std::size_t> by_id;
    by_id.reserve(n);
    for (std::size_t k = 0; k < n; ++k)
        if (!by_id.emplace(links[k].id, k).second)
            corrupt(run_id, "Two stages of the run have id " + id_text(links[k].id) + ".");

    // predecessor id -> the index of the stage that names it
    std::unordered_map<std::int64_t, std::size_t> successor;
    successor.reserve(n);
    std::vector<std::size_t> roots;
    for (std::size_t k = 0; k < n; ++k) {
        const Link& l = links[k];
        if (!l.has_predecessor) {
            roots.push_back(k);
            continue;
        }
        if (by_id.count(l.predecessor) == 0)
            corrupt(run_id, "Stage " + id_text(l.id) + " names predecessor " + id_text(l.predecessor) +
                    ", which is not a stage of the run.");
        const auto [it, inserted] = successor.emplace(l.predecessor, k);
        if (!inserted)
            corrupt(run_id, "Stages " + id_text(links[it->second].id) + " and " + id_text(l.id) +
                    " both name predecessor " + id_text(l.predecessor) +
                    "; a stage has at most one successor.");
    }
    if (roots.empty())
        corrupt(run_id, "Every stage of the run names a predecessor, so the chain has no first stage "
            "(its " +
            std::to_string(n) + " stages form a cycle).");
    if (roots.size() > 1)
        corrupt(run_id, std::to_string(roots.size()) + " stages of the run have no predecessor (ids " +
                id_text(links[roots[0]].id) + ", " + id_text(links[roots[1]].id) +
                (roots.size() > 2 ? ", ..." : "") + "); a chain has exactly one first stage.");

    std::vector<std::size_t> order;
    order.reserve(n);
    std::vector<bool> visited(n, false);
    std::size_t cur = roots[0];
    for (;;) {
        // A stage has one predecessor and the root none, so the walk never revisits a stage;
        // the check only guards that reasoning.
        if (visited[cur])
            corrupt(run_id, "Stage " + id_text(links[cur].id) + " is reached twice.");
        visited[cur] = true;
        order.push_back(cur);
        const auto it = successor.find(links[cur].id);
        if (it == successor.end())
            break;
        cur = it->second;
    }
    if (order.size() == n)
        return order;

    // Each stage off the walk has exactly one predecessor, also off the walk, and at most one
    // successor; counting edges, each then has exactly one successor, so the stages off the
    // walk form cycles and the first of them lies on one.
    std::size_t on_cycle = 0;
    while (visited[on_cycle])
        ++on_cycle;
    corrupt(run_id, std::to_string(n - order.size()) + " of the run's " + std::to_string(n) +
            " stages are not reachable from its first stage " + id_text(links[roots[0]].id) +
            "; stage " + id_text(links[on_cycle].id) + " lies on a cycle of predecessors.");
}

}  // namespace baton::chain
