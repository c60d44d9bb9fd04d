// The checks of baton.health (see health.hpp).
#include "core/health.hpp"

#include <cmath>
#include <cstdio>

namespace baton::health {

namespace {

// A count for a detail: "at least N" when it reached the cap.
std::string count_text(std::int64_t n) {
    return (n >= kCountCap ? "at least " : "") + std::to_string(n);
}

// "1 expired lease", "3 expired leases".
std::string plural(std::int64_t n, const char* one, const char* many) {
    return count_text(n) + " " + (n == 1 ? one : many);
}

// A fraction as a percentage with one decimal: "12.5%".
std::string percent(double fraction) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", fraction * 100.0);
    return buf;
}

}  // namespace

const char* status_name(Status s) {
    switch (s) {
        case Status::kOk:
            return "ok";
        case Status::kWarn:
            return "warn";
        case Status::kCritical:
            return "critical";
    }
    return "critical";
}

// Whole units, the two largest that are not zero.
std::string duration_text(double seconds) {
    if (!(seconds > 0)) return "0 s";
    auto s = static_cast<std::int64_t>(std::floor(seconds));
    const std::int64_t d = s / 86400, h = s % 86400 / 3600, m = s % 3600 / 60, sec = s % 60;
    auto two = [](std::int64_t a, const char* ua, std::int64_t b, const char* ub) {
        return std::to_string(a) + " " + ua + (b > 0 ? " " + std::to_string(b) + " " + ub : "");
    };
    if (d > 0) return two(d, "d", h, "h");
    if (h > 0) return two(h, "h", m, "min");
    if (m > 0) return two(m, "min", sec, "s");
    return std::to_string(sec) + " s";
}

std::int64_t xid_age(std::uint32_t next, std::uint32_t xid) {
    return static_cast<std::int32_t>(next - xid);
}

// --- xmin_horizon ----------------------------------------------------------------------

Status holder_status(const Holder& h, const XminThresholds& t) {
    if (!h.age_seconds) return h.kind == HolderKind::kReplicationSlot && !h.active ? Status::kWarn : Status::kOk;
    if (*h.age_seconds >= t.critical_seconds) return Status::kCritical;
    if (*h.age_seconds >= t.warn_seconds) return Status::kWarn;
    return Status::kOk;
}

std::optional<Holder> worst_holder(const std::vector<Holder>& holders, const XminThresholds& t) {
    const Holder* best = nullptr;
    Status best_status = Status::kOk;
    for (const Holder& h : holders) {
        Status s = holder_status(h, t);
        if (best == nullptr || static_cast<int>(s) > static_cast<int>(best_status) ||
            (s == best_status && (h.xid_age > best->xid_age ||
                                  (h.xid_age == best->xid_age && h.own_xid && !best->own_xid)))) {
            best = &h;
            best_status = s;
        }
    }
    if (best == nullptr) return std::nullopt;
    return *best;
}

Check xmin_horizon(const std::vector<Holder>& holders, const XminThresholds& t) {
    std::optional<Holder> h = worst_holder(holders, t);
    if (!h) return {"xmin_horizon", Status::kOk, 0, "no session, prepared transaction or replication slot holds the xmin horizon", ""};
    Status status = holder_status(*h, t);
    double value = h->age_seconds ? *h->age_seconds : static_cast<double>(h->xid_age);
    std::string xids = std::to_string(h->xid_age) + (h->xid_age == 1 ? " transaction old" : " transactions old");
    std::string detail;
    std::string hint;
    switch (h->kind) {
        case HolderKind::kSession:
            detail = "session " + std::to_string(h->pid) + " (user " + h->user + ", database " + h->database +
                     ") holds the xmin horizon: " +
                     (h->age_seconds ? "its transaction began " + duration_text(*h->age_seconds) + " ago"
                                     : "it holds a standby's or a snapshot's xmin outside a transaction") +
                     ", " + xids;
            hint = "End that transaction (COMMIT or ROLLBACK in its application, or SELECT "
                   "pg_terminate_backend(" + std::to_string(h->pid) +
                   ")); idle_in_transaction_session_timeout and statement_timeout keep sessions from holding it.";
            break;
        case HolderKind::kPreparedTransaction:
            detail = "prepared transaction \"" + h->name + "\" (owner " + h->user + ", database " + h->database +
                     ") holds the xmin horizon: prepared " + duration_text(h->age_seconds.value_or(0)) + " ago, " +
                     xids;
            hint = "Finish it in database " + h->database + ": COMMIT PREPARED '" + h->name +
                   "' or ROLLBACK PREPARED '" + h->name + "', as its transaction manager decided.";
            break;
        case HolderKind::kReplicationSlot:
            detail = "replication slot \"" + h->name + "\" (" + (h->active ? "active" : "inactive") +
                     ") holds the xmin horizon: " + xids;
            hint = h->active ? "Its consumer (a standby with hot_standby_feedback) holds an old snapshot: end the "
                               "long query on the standby."
                             : "No consumer is connected to it: bring its consumer back, or drop it with SELECT "
                               "pg_drop_replication_slot('" + h->name + "') if none will return.";
            break;
    }
    if (status == Status::kOk) hint.clear();
    return {"xmin_horizon", status, value, detail, hint};
}

// --- dead_rows -------------------------------------------------------------------------

double dead_fraction(const TableRows& t) {
    std::int64_t total = t.live + t.dead;
    return total > 0 ? static_cast<double>(t.dead) / static_cast<double>(total) : 0.0;
}

Check dead_rows(const std::vector<TableRows>& tables, const DeadRowsThresholds& t) {
    const TableRows* pick = nullptr;
    bool pick_counts = false;
    for (const TableRows& r : tables) {
        bool counts = r.dead >= t.min_dead;
        if (pick == nullptr || (counts && !pick_counts) ||
            (counts == pick_counts && dead_fraction(r) > dead_fraction(*pick))) {
            pick = &r;
            pick_counts = counts;
        }
    }
    if (pick == nullptr) return {"dead_rows", Status::kOk, 0, "pg_stat_user_tables shows no table of schema baton", ""};
    double fraction = dead_fraction(*pick);
    Status status = pick_counts && fraction >= t.warn_fraction ? Status::kWarn : Status::kOk;
    std::string detail = "table " + pick->table + ": " + std::to_string(pick->dead) + " dead rows against " +
                         std::to_string(pick->live) + " live (" + percent(fraction) + "), " +
                         (pick->last_vacuum.empty() ? "never vacuumed" : "last vacuumed " + pick->last_vacuum);
    std::string hint;
    if (status != Status::kOk)
        hint = "Vacuum it (VACUUM " + pick->table +
               "); if autovacuum does not keep up, look at the xmin_horizon row (an old snapshot keeps dead rows) "
               "and at autovacuum_max_workers and autovacuum_vacuum_cost_limit.";
    return {"dead_rows", status, fraction, detail, hint};
}

// --- reaper ----------------------------------------------------------------------------

Check reaper(const ReaperState& s) {
    // Without a reaper, the value is what waits for one: the expired leases nobody takes
    // back (seconds since a last round would speak of a reaper that does not exist).
    const double waiting = static_cast<double>(s.expired_leases);
    const std::string by_hand =
        "call baton.reap() and baton.fire_schedules() every few seconds (cron, a worker loop): without a reaper "
        "expired leases are not taken back and no schedule fires.";
    if (!s.preloaded)
        return {"reaper", Status::kWarn, waiting,
                "no reaper: pg_baton is not preloaded, so no background reaper runs in database " + s.database +
                    " (" + plural(s.expired_leases, "expired lease waits", "expired leases wait") + ")",
                "Add pg_baton to shared_preload_libraries and restart the server, or " + by_hand};
    if (!s.served)
        return {"reaper", Status::kWarn, waiting,
                "no reaper: baton.reaper_databases does not name database " + s.database +
                    ", so no background reaper runs there (" +
                    plural(s.expired_leases, "expired lease waits", "expired leases wait") + ")",
                "Add it to baton.reaper_databases (or set it to '*') and restart the server, or " + by_hand};
    double value = s.since_run.value_or(s.since_start);
    std::string when = s.since_run ? "last reaped " + duration_text(*s.since_run) + " ago"
                                   : "has not reaped since the server started " + duration_text(s.since_start) + " ago";
    std::string detail = "the reaper of database " + s.database + " " + when;
    bool late = !s.since_run || *s.since_run >= 3 * s.interval_seconds;
    if (!late) return {"reaper", Status::kOk, value, detail, ""};
    if (s.expired_leases > 0)
        return {"reaper", Status::kCritical, value,
                detail + ", and " + plural(s.expired_leases, "expired lease waits", "expired leases wait"),
                "Look in the server log for \"pg_baton reaper\" errors and for \"no background worker slot\"; "
                "raise max_worker_processes if slots run out; meanwhile call baton.reap() and baton.fire_schedules()."};
    return {"reaper", Status::kWarn, value, detail + " (its interval is " + duration_text(s.interval_seconds) + ")",
            "Look in the server log for \"pg_baton reaper\" errors and for \"no background worker slot\"; "
            "raise max_worker_processes if slots run out."};
}

// --- expired_leases --------------------------------------------------------------------

Check expired_leases(const ExpiredLeases& e, double warn_seconds) {
    if (e.count == 0) return {"expired_leases", Status::kOk, 0, "no expired lease", ""};
    std::string detail = plural(e.count, "expired lease", "expired leases") + "; the oldest, delivery " +
                         std::to_string(e.id) + " of tenant " + e.tenant + " to target \"" + e.target +
                         "\", expired " + duration_text(e.expired_seconds) + " ago";
    if (e.expired_seconds < warn_seconds)
        return {"expired_leases", Status::kOk, static_cast<double>(e.count), detail, ""};
    return {"expired_leases", Status::kWarn, static_cast<double>(e.count), detail,
            "Nothing takes them back: see the reaper row (or call baton.reap(), and baton.fire_schedules() for the "
            "schedules); workers of target \"" + e.target +
                "\" may be dying or take longer than their lease (renew it)."};
}

// --- stuck_runs ------------------------------------------------------------------------

Check stuck_runs(const StuckRuns& s, double stuck_after_seconds) {
    if (s.count == 0)
        return {"stuck_runs", Status::kOk, 0, "no run stuck for " + duration_text(stuck_after_seconds) + " or more", ""};
    std::string why = s.lease_expired ? "the lease of owner \"" + s.owner + "\" expired " +
                                            duration_text(s.stuck_seconds) + " ago"
                                      : "stage \"" + s.stage + "\" failed and its retry deadline passed " +
                                            duration_text(s.stuck_seconds) + " ago";
    std::string detail = plural(s.count, "stuck run", "stuck runs") + "; the longest, run " + s.run_id +
                         " of workflow \"" + s.workflow + "\" in tenant " + s.tenant + ": " + why;
    std::string hint = s.lease_expired
                           ? "The owner is gone or late: another owner takes the run over with baton.acquire_run() "
                             "(or acquire_next_run), then resolves its markers in doubt."
                           : "No owner came back for the retry: an owner acquires the run and calls "
                             "baton.transition_stage(); or baton.cancel() ends it.";
    return {"stuck_runs", Status::kWarn, static_cast<double>(s.count), detail, hint};
}

// --- markers_in_doubt ------------------------------------------------------------------

Check markers_in_doubt(const MarkersInDoubt& m) {
    if (m.count == 0) return {"markers_in_doubt", Status::kOk, 0, "no marker in doubt", ""};
    std::string detail = plural(m.count, "marker in doubt", "markers in doubt") + "; the oldest, position " +
                         std::to_string(m.position) + " of entry " + std::to_string(m.entry_id) + " (kind \"" +
                         m.kind + "\") of run " + m.run_id + " in tenant " + m.tenant + ", claimed " +
                         duration_text(m.claimed_seconds) + " ago";
    return {"markers_in_doubt", Status::kWarn, static_cast<double>(m.count), detail,
            "The run's current owner finds out whether each action happened (baton.markers_in_doubt(tenant, "
            "run_id)) and records it with baton.resolve_marker(); never run such an action blindly again."};
}

// --- schedules_behind ------------------------------------------------------------------

Check schedules_behind(const SchedulesBehind& s, double warn_seconds) {
    if (s.count == 0)
        return {"schedules_behind", Status::kOk, 0,
                "no schedule is " + duration_text(warn_seconds) + " or more behind", ""};
    std::string detail = plural(s.count, "schedule behind", "schedules behind") + "; the most overdue, \"" + s.name +
                         "\" of tenant " + s.tenant + ", is " + duration_text(s.late_seconds) + " overdue";
    return {"schedules_behind", Status::kWarn, static_cast<double>(s.count), detail,
            "Nothing fires them: call baton.fire_schedules() every few seconds (cron, a worker loop); a tenant "
            "that is not active keeps its schedules unfired."};
}

// --- paused ----------------------------------------------------------------------------

Check paused(const Paused& p) {
    std::int64_t n = p.bindings + p.everywhere;
    if (n == 0) return {"paused", Status::kOk, 0, "no target is paused", ""};
    std::string detail = plural(p.bindings, "binding", "bindings") + " and " +
                         plural(p.everywhere, "target everywhere", "targets everywhere") + " paused; the longest, target \"" +
                         p.target + "\"" + (p.tenant.empty() ? " in every tenant" : " of tenant " + p.tenant) +
                         ", for " + duration_text(p.paused_seconds);
    return {"paused", Status::kOk, static_cast<double>(n), detail, ""};
}

// --- waiting_on_limits -----------------------------------------------------------------

Check waiting_on_limits(const WaitingOnLimits& w) {
    if (w.count == 0) return {"waiting_on_limits", Status::kOk, 0, "no delivery waits on a key's limit", ""};
    std::string detail = plural(w.count, "delivery waits", "deliveries wait") + " on a key's limit; the longest, key \"" +
                         w.key + "\" of target \"" + w.target + "\" in tenant " + w.tenant + ", for " +
                         duration_text(w.waiting_seconds);
    return {"waiting_on_limits", Status::kOk, static_cast<double>(w.count), detail, ""};
}

// --- oldest_pending --------------------------------------------------------------------

Check oldest_pending(const OldestPending& p, double warn_seconds) {
    if (!p.any) return {"oldest_pending", Status::kOk, 0, "no pending delivery is due", ""};
    std::string detail = "delivery " + std::to_string(p.id) + " of tenant " + p.tenant + " to target \"" +
                         p.target + "\" has waited " + duration_text(p.due_seconds) + " since it was due";
    if (p.due_seconds < warn_seconds) return {"oldest_pending", Status::kOk, p.due_seconds, detail, ""};
    return {"oldest_pending", Status::kWarn, p.due_seconds, detail,
            "Workers of target \"" + p.target +
                "\" do not keep up or do not run: start more of them, or look at the tenant's state "
                "(only an active tenant's deliveries are claimed)."};
}

}  // namespace baton::health
