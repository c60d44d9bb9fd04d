// Unit tests for the chain order of a run's stages (src/core/chain.*).
#include "core/chain.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "state_of.hpp"

namespace baton::chain {
namespace {

using baton::test::error_of;

// The run every refusal names.
constexpr const char* kRun = "6f1c2d3e-0000-4000-8000-00000000abcd";

// A stage without a predecessor.
Link root(std::int64_t id) {
    return Link{id, 0, false};
}
// A stage after predecessor.
Link after(std::int64_t id, std::int64_t predecessor) {
    return Link{id, predecessor, true};
}

// The ids of links in the order chain_order gives.
std::vector<std::int64_t> ordered_ids(const std::vector<Link>& links) {
    std::vector<std::int64_t> ids;
    for (std::size_t k : chain_order(links, kRun))
        ids.push_back(links.at(k).id);
    return ids;
}

// The detail of the DU004 refusal of links; fails the test otherwise.
std::string corruption(const std::vector<Link>& links) {
    auto e = error_of([&] { chain_order(links, kRun); });
    if (!e) {
        ADD_FAILURE() << "accepted";
        return {};
    }
    EXPECT_EQ(e->state(), SqlState::kCorruptHistory);
    EXPECT_STREQ(e->code(), "DU004");
    EXPECT_EQ(e->message(), std::string("history of run ") + kRun + " is corrupt");
    return e->detail();
}

// Expects links refused with a detail holding each fragment.
void expect_corrupt(const std::vector<Link>& links, const std::vector<std::string>& fragments) {
    const std::string d = corruption(links);
    for (const std::string& f : fragments)
        EXPECT_NE(d.find(f), std::string::npos) << "detail: " << d << "\nlacks: " << f;
}

// ---- good chains -----------------------------------------------------------------------

TEST(Chain, EmptyIsEmpty) {
    EXPECT_TRUE(chain_order({}, kRun).empty());
}

TEST(Chain, SingleRoot) {
    EXPECT_EQ(chain_order({root(5)}, kRun), (std::vector<std::size_t>{0}));
    // The predecessor field of a root is not looked at.
    EXPECT_EQ(chain_order({Link{5, 99, false}}, kRun), (std::vector<std::size_t>{0}));
}

TEST(Chain, OrderComesFromLinksNotPositionsOrIds) {
    // Ids descend along the chain and the rows come in no particular order.
    const std::vector<Link> links = {after(10, 30), root(40), after(20, 10), after(30, 40)};
    EXPECT_EQ(chain_order(links, kRun), (std::vector<std::size_t>{1, 3, 0, 2}));
    EXPECT_EQ(ordered_ids(links), (std::vector<std::int64_t>{40, 30, 10, 20}));
}

TEST(Chain, ExtremeIds) {
    const std::int64_t lo = std::numeric_limits<std::int64_t>::min();
    const std::int64_t hi = std::numeric_limits<std::int64_t>::max();
    const std::vector<Link> links = {after(0, hi), root(lo), after(hi, lo), after(-1, 0)};
    EXPECT_EQ(ordered_ids(links), (std::vector<std::int64_t>{lo, hi, 0, -1}));
}

TEST(Chain, TenThousandShuffled) {
    constexpr int kN = 10000;
    std::mt19937_64 rng(42);
    // Distinct ids in a random order along the chain.
    std::vector<std::int64_t> chain(kN);
    for (int k = 0; k < kN; ++k)
        chain[k] = 1000 + 7 * static_cast<std::int64_t>(k);
    std::shuffle(chain.begin(), chain.end(), rng);
    std::vector<Link> links;
    links.push_back(root(chain[0]));
    for (int k = 1; k < kN; ++k)
        links.push_back(after(chain[k], chain[k - 1]));
    std::shuffle(links.begin(), links.end(), rng);

    const std::vector<std::size_t> order = chain_order(links, kRun);
    ASSERT_EQ(order.size(), static_cast<std::size_t>(kN));
    for (int k = 0; k < kN; ++k)
        ASSERT_EQ(links[order[k]].id, chain[k]) << "position " << k;
    std::vector<std::size_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (int k = 0; k < kN; ++k)
        ASSERT_EQ(sorted[k], static_cast<std::size_t>(k));
}

// ---- corruption ------------------------------------------------------------------------

TEST(ChainCorrupt, DuplicateId) {
    expect_corrupt({root(1), after(2, 1), after(2, 1)}, {"Two stages", "id 2"});
    expect_corrupt({root(1), root(1)}, {"id 1"});
}

TEST(ChainCorrupt, NoRoot) {
    expect_corrupt({after(1, 2), after(2, 1)}, {"no first stage", "2 stages form a cycle"});
    expect_corrupt({after(7, 7)}, {"no first stage"});  // a stage that is its own predecessor
}

TEST(ChainCorrupt, MoreThanOneRoot) {
    expect_corrupt({root(1), after(2, 1), root(3)}, {"2 stages", "no predecessor", "1, 3"});
    expect_corrupt({root(1), root(2), root(3), root(4)}, {"4 stages", "1, 2, ..."});
}

TEST(ChainCorrupt, PredecessorNotInTheSet) {
    expect_corrupt({root(1), after(2, 1), after(3, 99)},
                   {"Stage 3 names predecessor 99", "not a stage of the run"});
    // Also when the missing predecessor would be the only way to the root.
    expect_corrupt({after(2, 1), after(3, 2)}, {"Stage 2 names predecessor 1"});
}

TEST(ChainCorrupt, TwoSuccessors) {
    expect_corrupt({root(1), after(2, 1), after(3, 1)},
                   {"Stages 2 and 3 both name predecessor 1", "at most one successor"});
    expect_corrupt({root(1), after(2, 1), after(3, 2), after(4, 3), after(5, 3)},
                   {"4 and 5", "predecessor 3"});
}

TEST(ChainCorrupt, CycleBesideTheChain) {
    // 1 -> 2 -> 3 is the chain; 4 <-> 5 point at each other and nothing reaches them.
    expect_corrupt({root(1), after(2, 1), after(3, 2), after(4, 5), after(5, 4)},
                   {"2 of the run's 5 stages are not reachable", "first stage 1", "cycle"});
    // A stage that is its own predecessor, beside a good chain.
    expect_corrupt({root(1), after(2, 1), after(9, 9)},
                   {"1 of the run's 3 stages", "stage 9 lies on a cycle"});
}

TEST(ChainCorrupt, TwoCyclesBesideTheChain) {
    // 4 -> 5 -> 6 -> 4 and 8 <-> 9: every stage of both is counted as unreachable.
    const std::string d = corruption(
        {root(1), after(2, 1), after(4, 6), after(5, 4), after(6, 5), after(8, 9), after(9, 8)});
    EXPECT_NE(d.find("5 of the run's 7 stages are not reachable"), std::string::npos) << d;
}

TEST(ChainCorrupt, TailHangingOffACycle) {
    // 6 follows 4, which is on the cycle 4 <-> 5: 4 then has two successors, 5 and 6.
    expect_corrupt({root(1), after(2, 1), after(4, 5), after(5, 4), after(6, 4)},
                   {"Stages 5 and 6 both name predecessor 4"});
}

TEST(ChainCorrupt, ShuffledLongChainWithOneBrokenLink) {
    constexpr int kN = 1000;
    std::vector<Link> links;
    links.push_back(root(0));
    for (int k = 1; k < kN; ++k)
        links.push_back(after(k, k - 1));
    links[500].predecessor = 5000;  // broken: names no stage
    std::mt19937 rng(3);
    std::shuffle(links.begin(), links.end(), rng);
    expect_corrupt(links, {"Stage 500 names predecessor 5000"});
}

TEST(ChainCorrupt, EveryCorruptionIsDU004) {
    const std::vector<std::vector<Link>> cases = {
        {root(1), root(1)},
        {after(1, 2), after(2, 1)},
        {root(1), root(2)},
        {root(1), after(2, 3)},
        {root(1), after(2, 1), after(3, 1)},
        {root(1), after(2, 3), after(3, 2)},
    };
    for (const auto& links : cases)
        EXPECT_EQ(baton::test::state_of([&] { chain_order(links, kRun); }), SqlState::kCorruptHistory);
}

}  // namespace
}  // namespace baton::chain
