// Unit tests for the checks of baton.health (src/core/health.*): the classification of
// each check under its thresholds, which xmin holder the row names, and the words of
// detail and hint.
#include "core/health.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace baton::health {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const XminThresholds kXmin{300, 1800};

Holder session(std::int32_t pid, std::int64_t xid_age, std::optional<double> age) {
    return {HolderKind::kSession, xid_age, age, pid, "alice", "app", "", true, false};
}

TEST(HealthTest, StatusNames) {
    EXPECT_STREQ(status_name(Status::kOk), "ok");
    EXPECT_STREQ(status_name(Status::kWarn), "warn");
    EXPECT_STREQ(status_name(Status::kCritical), "critical");
}

TEST(HealthTest, DurationText) {
    EXPECT_EQ(duration_text(0), "0 s");
    EXPECT_EQ(duration_text(-3), "0 s");
    EXPECT_EQ(duration_text(42.9), "42 s");
    EXPECT_EQ(duration_text(60), "1 min");
    EXPECT_EQ(duration_text(423), "7 min 3 s");
    EXPECT_EQ(duration_text(7500), "2 h 5 min");
    EXPECT_EQ(duration_text(3 * 86400 + 4 * 3600 + 59), "3 d 4 h");
}

TEST(HealthTest, XidAgeWrapsAround) {
    EXPECT_EQ(xid_age(1000, 900), 100);
    EXPECT_EQ(xid_age(5, 4294967290u), 11);  // the counter wrapped past 2^32
    EXPECT_EQ(xid_age(900, 1000), -100);     // a newer xid than next: not older
}

TEST(HealthTest, XminNoHolderIsOk) {
    Check c = xmin_horizon({}, kXmin);
    EXPECT_STREQ(c.name, "xmin_horizon");
    EXPECT_EQ(c.status, Status::kOk);
    EXPECT_EQ(c.value, 0);
    EXPECT_TRUE(c.hint.empty());
}

TEST(HealthTest, XminSessionThresholds) {
    EXPECT_EQ(holder_status(session(1, 10, 299), kXmin), Status::kOk);
    EXPECT_EQ(holder_status(session(1, 10, 300), kXmin), Status::kWarn);
    EXPECT_EQ(holder_status(session(1, 10, 1799), kXmin), Status::kWarn);
    EXPECT_EQ(holder_status(session(1, 10, 1800), kXmin), Status::kCritical);
    // Thresholds of 0: every holder warns (or is critical).
    EXPECT_EQ(holder_status(session(1, 10, 0), XminThresholds{0, 100}), Status::kWarn);
    EXPECT_EQ(holder_status(session(1, 10, 0), XminThresholds{0, 0}), Status::kCritical);
}

TEST(HealthTest, XminUnknownAge) {
    Holder slot{HolderKind::kReplicationSlot, 5000, std::nullopt, 0, "", "", "standby_1", false, false};
    EXPECT_EQ(holder_status(slot, kXmin), Status::kWarn);
    slot.active = true;
    EXPECT_EQ(holder_status(slot, kXmin), Status::kOk);
    EXPECT_EQ(holder_status(session(7, 5000, std::nullopt), kXmin), Status::kOk);
}

TEST(HealthTest, XminNamesTheWorstThenTheOldest) {
    // The oldest xmin (a session ok by time) loses to a younger xmin that is critical.
    std::vector<Holder> holders = {session(1, 900, 10), session(2, 500, 2000), session(3, 800, 400)};
    EXPECT_EQ(worst_holder(holders, kXmin)->pid, 2);
    // Among equals, the oldest xmin.
    holders = {session(1, 100, 400), session(2, 500, 350), session(3, 300, 500)};
    EXPECT_EQ(worst_holder(holders, kXmin)->pid, 2);
    holders = {session(1, 100, 1), session(2, 50, 2)};
    EXPECT_EQ(worst_holder(holders, kXmin)->pid, 1);
    // Equally old: the owner of the transaction id, not a snapshot it holds back.
    Holder owner = session(9, 100, 1);
    owner.own_xid = true;
    holders = {session(1, 100, 1), owner, session(2, 100, 1)};
    EXPECT_EQ(worst_holder(holders, kXmin)->pid, 9);
}

TEST(HealthTest, XminSessionRow) {
    Check c = xmin_horizon({session(4242, 17, 420)}, kXmin);
    EXPECT_EQ(c.status, Status::kWarn);
    EXPECT_EQ(c.value, 420);
    EXPECT_EQ(c.detail,
              "session 4242 (user alice, database app) holds the xmin horizon: its transaction began 7 min ago, "
              "17 transactions old");
    EXPECT_TRUE(contains(c.hint, "pg_terminate_backend(4242)"));
}

TEST(HealthTest, XminPreparedTransactionRow) {
    Holder p{HolderKind::kPreparedTransaction, 1, 3600, 0, "bob", "app", "tx-7", false, true};
    Check c = xmin_horizon({p, session(1, 0, 5)}, kXmin);
    EXPECT_EQ(c.status, Status::kCritical);
    EXPECT_EQ(c.detail,
              "prepared transaction \"tx-7\" (owner bob, database app) holds the xmin horizon: prepared 1 h ago, 1 "
              "transaction old");
    EXPECT_TRUE(contains(c.hint, "COMMIT PREPARED 'tx-7'"));
    EXPECT_TRUE(contains(c.hint, "ROLLBACK PREPARED 'tx-7'"));
}

TEST(HealthTest, XminSlotRow) {
    Holder slot{HolderKind::kReplicationSlot, 5000, std::nullopt, 0, "", "", "standby_1", false, false};
    Check c = xmin_horizon({slot}, kXmin);
    EXPECT_EQ(c.status, Status::kWarn);
    EXPECT_EQ(c.value, 5000);  // its age in transactions: Postgres 15 records no time
    EXPECT_EQ(c.detail, "replication slot \"standby_1\" (inactive) holds the xmin horizon: 5000 transactions old");
    EXPECT_TRUE(contains(c.hint, "pg_drop_replication_slot('standby_1')"));
}

TEST(HealthTest, DeadRows) {
    DeadRowsThresholds t{0.2, 1000};
    std::vector<TableRows> tables = {{"baton.deliveries", 9000, 3000, "2026-01-01 10:00:00+00"},
                                     {"baton.runs", 10, 90, ""},  // a higher fraction, too few rows
                                     {"baton.stages", 1000, 1500, ""}};
    Check c = dead_rows(tables, t);
    EXPECT_EQ(c.status, Status::kWarn);
    EXPECT_DOUBLE_EQ(c.value, 0.6);
    EXPECT_EQ(c.detail, "table baton.stages: 1500 dead rows against 1000 live (60.0%), never vacuumed");
    EXPECT_TRUE(contains(c.hint, "VACUUM baton.stages"));
    // Under the fraction: ok, still naming the table.
    c = dead_rows({tables[0]}, t);
    EXPECT_EQ(c.status, Status::kWarn);
    c = dead_rows({tables[0]}, {0.3, 1000});
    EXPECT_EQ(c.status, Status::kOk);
    EXPECT_TRUE(contains(c.detail, "last vacuumed 2026-01-01 10:00:00+00"));
    EXPECT_TRUE(c.hint.empty());
    // No table reaches min_dead: the highest fraction is named, ok.
    c = dead_rows({tables[1]}, t);
    EXPECT_EQ(c.status, Status::kOk);
    EXPECT_TRUE(contains(c.detail, "baton.runs"));
    EXPECT_DOUBLE_EQ(dead_fraction({"x", 0, 0, ""}), 0.0);
    EXPECT_EQ(dead_rows({}, t).status, Status::kOk);
}

TEST(HealthTest, Reaper) {
    ReaperState s{true, true, "app", 0.5, 100, 1, 0};
    EXPECT_EQ(reaper(s).status, Status::kOk);
    EXPECT_EQ(reaper(s).detail, "the reaper of database app last reaped 0 s ago");
    s.since_run = 3;  // three intervals
    EXPECT_EQ(reaper(s).status, Status::kWarn);
    s.expired_leases = 4;
    Check c = reaper(s);
    EXPECT_EQ(c.status, Status::kCritical);
    EXPECT_EQ(c.value, 3);
    EXPECT_TRUE(contains(c.detail, "4 expired leases wait"));
    // Never ran: the value is the time since the server started.
    s.since_run.reset();
    c = reaper(s);
    EXPECT_EQ(c.status, Status::kCritical);
    EXPECT_EQ(c.value, 100);
    EXPECT_TRUE(contains(c.detail, "has not reaped since the server started"));
    // No reaper: the row says so first, its value is the expired leases that wait (not
    // a time since a round), and the hint names both calls that stand in for it.
    s.served = false;
    c = reaper(s);
    EXPECT_EQ(c.status, Status::kWarn);
    EXPECT_EQ(c.value, 4);
    EXPECT_EQ(c.detail.rfind("no reaper: baton.reaper_databases does not name database app", 0), 0u) << c.detail;
    EXPECT_TRUE(contains(c.detail, "4 expired leases wait"));
    EXPECT_TRUE(contains(c.hint, "baton.reap()") && contains(c.hint, "baton.fire_schedules()")) << c.hint;
    s.preloaded = false;
    s.expired_leases = 0;
    s.since_run = 7;
    c = reaper(s);
    EXPECT_EQ(c.status, Status::kWarn);
    EXPECT_EQ(c.value, 0);
    EXPECT_EQ(c.detail.rfind("no reaper: pg_baton is not preloaded", 0), 0u) << c.detail;
    EXPECT_TRUE(contains(c.hint, "shared_preload_libraries"));
    EXPECT_TRUE(contains(c.hint, "baton.reap()") && contains(c.hint, "baton.fire_schedules()")) << c.hint;
}

TEST(HealthTest, ExpiredLeases) {
    EXPECT_EQ(expired_leases({0, "", "", 0, 0}, 60).status, Status::kOk);
    ExpiredLeases e{2, "t1", "mail", 17, 30};
    Check c = expired_leases(e, 60);
    EXPECT_EQ(c.status, Status::kOk);
    EXPECT_EQ(c.value, 2);
    EXPECT_EQ(c.detail, "2 expired leases; the oldest, delivery 17 of tenant t1 to target \"mail\", expired 30 s ago");
    c = expired_leases(e, 30);
    EXPECT_EQ(c.status, Status::kWarn);
    EXPECT_TRUE(contains(c.hint, "target \"mail\""));
    e.count = kCountCap;
    EXPECT_TRUE(contains(expired_leases(e, 0).detail, "at least 10000 expired leases"));
}

TEST(HealthTest, StuckRuns) {
    EXPECT_EQ(stuck_runs({0, "", "", "", "", false, "", 0}, 300).detail, "no run stuck for 5 min or more");
    StuckRuns s{1, "t1", "r-1", "wf", "w1", true, "a", 600};
    Check c = stuck_runs(s, 300);
    EXPECT_EQ(c.status, Status::kWarn);
    EXPECT_EQ(c.detail, "1 stuck run; the longest, run r-1 of workflow \"wf\" in tenant t1: the lease of owner \"w1\" "
                        "expired 10 min ago");
    EXPECT_TRUE(contains(c.hint, "acquire_run"));
    s.lease_expired = false;
    c = stuck_runs(s, 300);
    EXPECT_TRUE(contains(c.detail, "stage \"a\" failed and its retry deadline passed 10 min ago"));
    EXPECT_TRUE(contains(c.hint, "transition_stage"));
}

TEST(HealthTest, MarkersInDoubt) {
    EXPECT_EQ(markers_in_doubt({0, "", "", 0, 0, "", 0}).status, Status::kOk);
    Check c = markers_in_doubt({3, "t1", "r-1", 12, 2, "mail", 90});
    EXPECT_EQ(c.status, Status::kWarn);
    EXPECT_EQ(c.value, 3);
    EXPECT_EQ(c.detail,
              "3 markers in doubt; the oldest, position 2 of entry 12 (kind \"mail\") of run r-1 in tenant t1, claimed 1 "
              "min 30 s ago");
    EXPECT_TRUE(contains(c.hint, "resolve_marker"));
}

TEST(HealthTest, SchedulesBehind) {
    Check c = schedules_behind({0, "", "", 0}, 60);
    EXPECT_EQ(c.status, Status::kOk);
    EXPECT_EQ(c.value, 0);
    EXPECT_EQ(c.detail, "no schedule is 1 min or more behind");
    c = schedules_behind({2, "t1", "nightly", 120}, 60);
    EXPECT_EQ(c.status, Status::kWarn);
    EXPECT_EQ(c.detail, "2 schedules behind; the most overdue, \"nightly\" of tenant t1, is 2 min overdue");
    EXPECT_TRUE(contains(c.hint, "fire_schedules"));
}

TEST(HealthTest, Paused) {
    Check c = paused({0, 0, "", "", 0});
    EXPECT_EQ(c.status, Status::kOk);
    EXPECT_EQ(c.value, 0);
    EXPECT_EQ(c.detail, "no target is paused");
    c = paused({2, 0, "t1", "mail", 90});
    EXPECT_EQ(c.status, Status::kOk);
    EXPECT_EQ(c.value, 2);
    EXPECT_EQ(c.detail, "2 bindings and 0 targets everywhere paused; the longest, target \"mail\" of tenant t1, for 1 min 30 s");
    c = paused({0, 1, "", "sms", 5});
    EXPECT_EQ(c.value, 1);
    EXPECT_EQ(c.detail, "0 bindings and 1 target everywhere paused; the longest, target \"sms\" in every tenant, for 5 s");
    EXPECT_TRUE(c.hint.empty());
}

TEST(HealthTest, WaitingOnLimits) {
    Check c = waiting_on_limits({0, "", "", "", 0});
    EXPECT_STREQ(c.name, "waiting_on_limits");
    EXPECT_EQ(c.status, Status::kOk);
    EXPECT_EQ(c.value, 0);
    EXPECT_EQ(c.detail, "no delivery waits on a key's limit");
    c = waiting_on_limits({3, "t1", "mail", "acme", 125});
    EXPECT_EQ(c.status, Status::kOk);
    EXPECT_EQ(c.value, 3);
    EXPECT_EQ(c.detail, "3 deliveries wait on a key's limit; the longest, key \"acme\" of target \"mail\" in tenant t1, for 2 min 5 s");
    c = waiting_on_limits({1, "t1", "mail", "acme", 5});
    EXPECT_EQ(c.detail, "1 delivery waits on a key's limit; the longest, key \"acme\" of target \"mail\" in tenant t1, for 5 s");
    EXPECT_TRUE(c.hint.empty());
}

TEST(HealthTest, OldestPending) {
    EXPECT_EQ(oldest_pending({false, "", "", 0, 0}, 300).status, Status::kOk);
    OldestPending p{true, "t1", "mail", 5, 299};
    EXPECT_EQ(oldest_pending(p, 300).status, Status::kOk);
    p.due_seconds = 300;
    Check c = oldest_pending(p, 300);
    EXPECT_EQ(c.status, Status::kWarn);
    EXPECT_EQ(c.value, 300);
    EXPECT_EQ(c.detail, "delivery 5 of tenant t1 to target \"mail\" has waited 5 min since it was due");
    EXPECT_EQ(oldest_pending(p, 0).status, Status::kWarn);
}

}  // namespace
}  // namespace baton::health
