// Unit tests for the claim hint protocol (src/core/claim_hint.*): scenarios, then a
// randomized simulation of writers and claimers interleaving their steps, checking after
// every step that no committed, unlocked pending row lies before the hint.
#include "core/claim_hint.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

namespace baton::claim_hint {
namespace {

Position at(std::int64_t id, std::int64_t priority = 0) { return {priority, id}; }

bool same(Position a, Position b) { return a.priority == b.priority && a.id == b.id; }

TEST(ClaimHintOrder, PriorityDescendingThenIdAscending) {
    EXPECT_TRUE(before(at(5, 1), at(1, 0)));
    EXPECT_TRUE(before(at(1), at(2)));
    EXPECT_FALSE(before(at(2), at(2)));
    EXPECT_TRUE(before(kTop, at(1, 2147483647)));
    EXPECT_TRUE(before(at(INT64_MAX - 1, -2147483648LL), kEnd));
}

TEST(ClaimHint, FreshStateStartsAtTheTop) {
    State s;
    reset(s);
    EXPECT_TRUE(same(begin(s).start, kTop));
}

TEST(ClaimHint, ForgetPutsTheHintAtTheTopAndNoClaimBegunBeforeRaisesPastIt) {
    State s;
    reset(s);
    Ticket first = begin(s);
    raise(s, first, at(10), 0);
    Ticket before_forget = begin(s);
    EXPECT_TRUE(same(before_forget.start, at(10)));
    forget(s);
    EXPECT_TRUE(same(begin(s).start, kTop));
    // A claim that scanned from the old hint saw none of the rows below it.
    EXPECT_TRUE(same(raise(s, before_forget, at(20), 0), kTop));
    // One that began after the forget scans from the top, and raises as usual.
    Ticket after = begin(s);
    EXPECT_TRUE(same(raise(s, after, at(5), 0), at(5)));
}

TEST(ClaimHint, ARaiseWithNothingInFlightMovesTheHint) {
    State s;
    reset(s);
    Ticket t = begin(s);
    EXPECT_TRUE(same(raise(s, t, at(10), 0), at(10)));
    EXPECT_TRUE(same(begin(s).start, at(10)));
}

TEST(ClaimHint, ALoweringLowersAndIsNeverUndoneByAnOlderClaim) {
    State s;
    reset(s);
    Ticket t = begin(s);
    lower(s, 7, false, at(3), false, 0);  // a retry of row 3 while the claim was scanning
    writer_done(s, 7);
    EXPECT_TRUE(same(raise(s, t, at(10), 0), at(3)));
}

TEST(ClaimHint, AWriterInFlightAtBeginBoundsTheRaiseAfterItCommits) {
    State s;
    reset(s);
    lower(s, 7, false, at(4), false, 0);  // insert of row 4, not yet committed
    Ticket t = begin(s);           // the scan cannot see row 4
    writer_done(s, 7);             // committed before the raise
    EXPECT_TRUE(same(raise(s, t, at(10), 0), at(4)));
}

TEST(ClaimHint, DelayedRowsHoldTheHintUntilAScanSawThemDue) {
    State s;
    reset(s);
    lower(s, 7, false, at(2), true, /*run_after=*/100);
    writer_done(s, 7);
    Ticket t = begin(s);
    EXPECT_TRUE(same(raise(s, t, at(10), /*now=*/50), at(2)));  // not due: held
    t = begin(s);
    EXPECT_TRUE(same(raise(s, t, at(10), /*now=*/150), at(10)));  // due and scanned over
    t = begin(s);
    EXPECT_TRUE(same(raise(s, t, at(20), 150), at(20)));  // forgotten once passed
}

TEST(ClaimHint, ADelayedRowBeyondTheScannedRangeIsKept) {
    State s;
    reset(s);
    lower(s, 7, false, at(30), true, 100);
    writer_done(s, 7);
    Ticket t = begin(s);
    EXPECT_TRUE(same(raise(s, t, at(10), 150), at(10)));
    t = begin(s);
    EXPECT_TRUE(same(raise(s, t, at(40), 50), at(30)));  // scanned, but not yet due
    t = begin(s);
    EXPECT_TRUE(same(raise(s, t, at(40), 150), at(40)));  // scanned and due
}

TEST(ClaimHint, TooManyLoweringsSinceBeginMeanNoRaise) {
    State s;
    reset(s);
    Ticket t = begin(s);
    for (int i = 0; i < kLogSize; i++) {
        lower(s, 7, false, at(100 + i), false, 0);
        writer_done(s, 7);
    }
    EXPECT_TRUE(same(raise(s, t, at(10), 0), kTop));
}

TEST(ClaimHint, WritersBeyondTheSlotsArePooled) {
    State s;
    reset(s);
    for (int w = 0; w < kInFlightSlots + 2; w++) lower(s, w, false, at(50 + w), false, 0);
    Ticket t = begin(s);
    EXPECT_TRUE(same(t.writers, at(50)));
    for (int w = 0; w < kInFlightSlots; w++) writer_done(s, w);
    EXPECT_TRUE(same(begin(s).writers, at(50 + kInFlightSlots)));
    writer_done(s, kInFlightSlots);
    writer_done(s, kInFlightSlots + 1);
    EXPECT_TRUE(same(begin(s).writers, kEnd));
}

TEST(ClaimHint, AWriterLoweringTwiceHoldsOneSlotAtItsFirstPosition) {
    State s;
    reset(s);
    lower(s, 3, false, at(9), false, 0);
    lower(s, 3, true, at(5), false, 0);
    EXPECT_TRUE(same(begin(s).writers, at(5)));
    writer_done(s, 3);
    EXPECT_TRUE(same(begin(s).writers, kEnd));
}

TEST(ClaimHint, APooledWriterLoweringManyRowsIsCountedOnce) {
    State s;
    reset(s);
    for (int w = 0; w < kInFlightSlots; w++) lower(s, w, false, at(10 + w), false, 0);
    for (int i = 0; i < 100; i++) lower(s, 99, i > 0, at(500 + i), false, 0);  // one batch
    EXPECT_EQ(s.pooled, 1u);
    writer_done(s, 99);
    for (int w = 0; w < kInFlightSlots; w++) writer_done(s, w);
    EXPECT_TRUE(same(begin(s).writers, kEnd));  // nothing left in flight: raises are free
}

// ---- the simulation -------------------------------------------------------------------

// One row's committed state and, while a transaction holds it, the holder.
struct Row {
    Position pos;
    bool pending = false;    // committed status
    std::int64_t run_after = 0;
    int holder = -1;         // claimer holding it (claimed, uncommitted), or -1
    bool committed = false;  // inserted row visible
};

struct Claimer {
    enum Phase { kIdle, kBegun, kScanned } phase = kIdle;
    Ticket ticket{};
    std::int64_t now = 0;
    Position last = kEnd;
    std::vector<std::int64_t> taken;
};

struct Writer {
    bool open = false;
    std::vector<std::int64_t> inserted;  // uncommitted rows
};

class Simulation {
  public:
    explicit Simulation(unsigned seed) : rng_(seed) { reset(state_); }

    void run(int steps) {
        for (int i = 0; i < steps; i++) {
            step();
            check();
        }
    }

    std::uint64_t claimed = 0;

  private:
    std::mt19937 rng_;
    State state_;
    std::map<std::int64_t, Row> rows_;
    Claimer claimers_[4];
    Writer writers_[20];  // more than kInFlightSlots: some are pooled
    std::int64_t clock_ = 1000;
    std::int64_t next_id_ = 1;

    int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

    // A due, committed, unlocked pending row, as a snapshot would see it.
    bool claimable(const Row& r, std::int64_t now) const {
        return r.committed && r.pending && r.holder < 0 && r.run_after <= now;
    }

    void step() {
        clock_ += pick(3);
        int what = pick(10);
        if (what < 3) {
            writer_step(pick(20));
        } else if (what < 9) {
            claimer_step(pick(4));
        } else if (!rows_.empty()) {
            // A retry or reap of a committed, settled row: pending again, maybe delayed.
            auto it = rows_.begin();
            std::advance(it, pick(static_cast<int>(rows_.size())));
            Row& r = it->second;
            if (r.committed && !r.pending && r.holder < 0) {
                bool delayed = pick(2) == 0;
                r.run_after = delayed ? clock_ + 1 + pick(20) : clock_;
                lower(state_, 100, false, r.pos, delayed, r.run_after);
                r.pending = true;
                writer_done(state_, 100);
            }
        }
    }

    void writer_step(int w) {
        Writer& wr = writers_[w];
        if (!wr.open || pick(2) == 0) {
            // Insert a row (maybe with a higher priority, maybe delayed).
            wr.open = true;
            std::int64_t id = next_id_++;
            Row r;
            r.pos = at(id, pick(4) == 0 ? 1 : 0);
            r.pending = true;
            bool delayed = pick(4) == 0;
            r.run_after = delayed ? clock_ + 1 + pick(30) : clock_;
            lower(state_, 10 + w, !wr.inserted.empty(), r.pos, delayed, r.run_after);
            rows_[id] = r;
            wr.inserted.push_back(id);
        } else {
            // Commit or abort.
            bool commit = pick(4) != 0;
            for (std::int64_t id : wr.inserted) {
                if (commit) rows_[id].committed = true;
                else rows_.erase(id);
            }
            wr.inserted.clear();
            wr.open = false;
            writer_done(state_, 10 + w);
        }
    }

    void claimer_step(int c) {
        Claimer& cl = claimers_[c];
        switch (cl.phase) {
            case Claimer::kIdle:
                cl.ticket = begin(state_);
                cl.now = clock_;
                cl.phase = Claimer::kBegun;
                break;
            case Claimer::kBegun: {
                // The scan, atomic like a statement under its row locks.
                int limit = 1 + pick(3);
                cl.taken.clear();
                cl.last = kEnd;
                for (auto& [id, r] : sorted_rows()) {
                    (void)id;
                    if (before(r->pos, cl.ticket.start) || !claimable(*r, cl.now)) continue;
                    r->holder = c;
                    cl.taken.push_back(r->pos.id);
                    if (static_cast<int>(cl.taken.size()) == limit) {
                        cl.last = r->pos;
                        break;
                    }
                }
                cl.phase = Claimer::kScanned;
                break;
            }
            case Claimer::kScanned: {
                raise(state_, cl.ticket, cl.last, cl.now);
                bool commit = pick(4) != 0;
                bool again = false;
                for (std::int64_t id : cl.taken) {
                    Row& r = rows_[id];
                    r.holder = -1;
                    if (commit) {
                        r.pending = false;
                        claimed++;
                    } else {
                        // The abort callback: the rows are pending again.
                        lower(state_, 200 + c, again, r.pos, r.run_after > clock_, r.run_after);
                        again = true;
                    }
                }
                if (!commit && !cl.taken.empty()) writer_done(state_, 200 + c);
                cl.phase = Claimer::kIdle;
                break;
            }
        }
    }

    std::vector<std::pair<std::int64_t, Row*>> sorted_rows() {
        std::vector<std::pair<std::int64_t, Row*>> out;
        for (auto& [id, r] : rows_) out.emplace_back(id, &r);
        std::sort(out.begin(), out.end(),
                  [](const auto& a, const auto& b) { return before(a.second->pos, b.second->pos); });
        return out;
    }

    // The invariant: every committed, unlocked pending row is at or after the hint.
    void check() {
        for (auto& [id, r] : rows_) {
            if (!(r.committed && r.pending && r.holder < 0)) continue;
            ASSERT_FALSE(before(r.pos, state_.hint))
                    << "row " << id << " (priority " << r.pos.priority << ") is before the hint at id "
                    << state_.hint.id << " priority " << state_.hint.priority;
        }
    }
};

TEST(ClaimHintSimulation, NoPendingRowIsEverBeforeTheHint) {
    std::uint64_t claimed = 0;
    for (unsigned seed = 1; seed <= 120; seed++) {
        Simulation sim(seed);
        sim.run(2000);
        if (::testing::Test::HasFatalFailure()) {
            ADD_FAILURE() << "seed " << seed;
            return;
        }
        claimed += sim.claimed;
    }
    EXPECT_GT(claimed, 5000u);  // the simulation claims, it does not only wait
}

}  // namespace
}  // namespace baton::claim_hint
