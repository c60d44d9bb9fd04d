// libFuzzer target: the chain order of a run's saved stages (src/core/chain.hpp), which
// reads rows from baton.stages: a corrupt table is outside input too.
//
// Input: a mode byte, then links. Mode bit 0 picks ids from a small range (so repeats and
// dangling predecessors are common) or full 64-bit values; mode bit 1 first lays the links
// out as one valid chain in an order drawn from the input and then lets later bytes damage
// it, so that both accepted and refused histories are reached.
//
// Properties: chain_order accepts exactly the sets an independent quadratic oracle calls
// one unbroken line (ids unique, one root, each stage the predecessor of at most one,
// every predecessor a stage, every stage reachable from the root); a refusal is DU004
// "history of run <run_id> is corrupt"; an accepted order is a permutation of the links that starts
// at the root and follows predecessor_id at every step.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <vector>

#include "core/chain.hpp"
#include "core/error.hpp"
#include "fuzz_check.hpp"

namespace {

using baton::chain::Link;

// One unbroken line through every link, by brute force.
bool oracle(const std::vector<Link>& links) {
    const std::size_t n = links.size();
    if (n == 0)
        return true;
    std::size_t roots = 0, root = 0;
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = i + 1; j < n; ++j)
            if (links[i].id == links[j].id)
                return false;
        if (!links[i].has_predecessor) {
            ++roots;
            root = i;
        }
    }
    if (roots != 1)
        return false;
    // Walk: the next stage is the only one naming the current one.
    std::size_t seen = 1;
    std::size_t cur = root;
    for (;;) {
        std::size_t successors = 0, succ = 0;
        for (std::size_t j = 0; j < n; ++j)
            if (links[j].has_predecessor && links[j].predecessor == links[cur].id) {
                ++successors;
                succ = j;
            }
        if (successors > 1)
            return false;
        if (successors == 0)
            break;
        if (++seen > n)
            return false;
        cur = succ;
    }
    return seen == n;
}

std::int64_t draw_id(FuzzedDataProvider& p, bool small) {
    return small ? p.ConsumeIntegralInRange<std::int64_t>(0, 11)
                 : p.ConsumeIntegral<std::int64_t>();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider p(data, size);
    const std::uint8_t mode = p.ConsumeIntegral<std::uint8_t>();
    const bool small = mode & 1;
    std::vector<Link> links;
    if (mode & 2) {
        // A valid chain: ids drawn (unique), laid out in a drawn order.
        const std::size_t n = p.ConsumeIntegralInRange<std::size_t>(1, 40);
        std::vector<std::int64_t> ids;
        for (std::size_t k = 0; k < n; ++k) {
            std::int64_t id =
                small ? static_cast<std::int64_t>(k) * 7 - 3 : p.ConsumeIntegral<std::int64_t>();
            bool dup = false;
            for (std::int64_t x : ids)
                dup = dup || x == id;
            if (!dup)
                ids.push_back(id);
        }
        for (std::size_t k = 0; k < ids.size(); ++k)
            links.push_back({ids[k], k ? ids[k - 1] : 0, k > 0});
        for (std::size_t k = links.size(); k > 1; --k)
            std::swap(links[k - 1], links[p.ConsumeIntegralInRange<std::size_t>(0, k - 1)]);
        // Damage: each remaining triple rewrites one field of one link.
        while (p.remaining_bytes() >= 3) {
            Link& l = links[p.ConsumeIntegralInRange<std::size_t>(0, links.size() - 1)];
            switch (p.ConsumeIntegralInRange<int>(0, 3)) {
                case 0:
                    l.id = draw_id(p, small);
                    break;
                case 1:
                    l.predecessor = draw_id(p, small);
                    break;
                case 2:
                    l.has_predecessor = !l.has_predecessor;
                    break;
                default:
                    links.push_back({draw_id(p, small), draw_id(p, small), p.ConsumeBool()});
            }
        }
    } else {
        while (p.remaining_bytes() > 0 && links.size() < 64)
            links.push_back({draw_id(p, small), draw_id(p, small), p.ConsumeBool()});
    }

    const bool expected = oracle(links);
    std::vector<std::size_t> order;
    try {
        order = baton::chain::chain_order(links, "6f1c2d3e-0000-4000-8000-00000000abcd");
    } catch (const baton::Error& e) {
        FUZZ_CHECK(!expected, "refused an unbroken chain");
        fuzz::check_refusal(e, "DU004", "history of run 6f1c2d3e-0000-4000-8000-00000000abcd is corrupt");
        return 0;
    }
    FUZZ_CHECK(expected, "accepted a broken chain");
    FUZZ_CHECK(order.size() == links.size(), "order is not a permutation (size)");
    std::vector<bool> used(links.size(), false);
    for (std::size_t k = 0; k < order.size(); ++k) {
        FUZZ_CHECK(order[k] < links.size() && !used[order[k]], "order is not a permutation");
        used[order[k]] = true;
        const Link& l = links[order[k]];
        if (k == 0)
            FUZZ_CHECK(!l.has_predecessor, "order does not start at the root");
        else
            FUZZ_CHECK(l.has_predecessor && l.predecessor == links[order[k - 1]].id,
                       "order does not follow predecessor_id");
    }
    return 0;
}
