// The settings of pg_baton (see settings.hpp).
#include "core/limits.hpp"
#include "pg/runtime/postgres.hpp"
#include "pg/runtime/settings.hpp"

namespace baton::settings {

int max_payload_bytes = limits::kDefaultMaxPayloadBytes;
bool notify = true;
bool direct_access = true;
bool authorization_cache = true;
int health_xmin_warn = 5 * 60;
int health_xmin_critical = 30 * 60;
double health_dead_rows_warn = 0.2;
int health_dead_rows_min = 1000;
int health_expired_warn = 60;
int health_stuck_after = 5 * 60;
int health_schedules_warn = 60;
int health_pending_warn = 5 * 60;
int priority_aging = 10 * 60;
char* reaper_databases = nullptr;
int reaper_interval_ms = 1000;
int reaper_batch = 1000;
int claim_hint_targets = 1024;
int counted_targets = 1024;
bool count_events = true;

namespace {

// One threshold of baton.health in seconds, any user may SET it (0 to a day).
void define_seconds(const char* name, const char* description, int* variable) {
    DefineCustomIntVariable(name, description, nullptr, variable, *variable, 0, 86400, PGC_USERSET, GUC_UNIT_S,
                            nullptr, nullptr, nullptr);
}

void define_health() {
    define_seconds("baton.health_xmin_warn", "Age of the xmin horizon's holder at which baton.health warns.",
                   &health_xmin_warn);
    define_seconds("baton.health_xmin_critical",
                   "Age of the xmin horizon's holder at which baton.health is critical.", &health_xmin_critical);
    DefineCustomRealVariable("baton.health_dead_rows_warn",
                             "Fraction of dead rows in a pg_baton table at which baton.health warns.", nullptr,
                             &health_dead_rows_warn, health_dead_rows_warn, 0.0, 1.0, PGC_USERSET, 0, nullptr,
                             nullptr, nullptr);
    DefineCustomIntVariable("baton.health_dead_rows_min",
                            "Dead rows a pg_baton table needs before baton.health judges its fraction.", nullptr,
                            &health_dead_rows_min, health_dead_rows_min, 0, INT_MAX, PGC_USERSET, 0, nullptr,
                            nullptr, nullptr);
    define_seconds("baton.health_expired_warn",
                   "Time since the oldest expired lease expired at which baton.health warns.", &health_expired_warn);
    define_seconds("baton.health_stuck_after",
                   "Time after which baton.health counts a run whose owner's lease expired, or whose retry "
                   "deadline passed, as stuck.",
                   &health_stuck_after);
    define_seconds("baton.health_schedules_warn", "Time a schedule is overdue at which baton.health warns.",
                   &health_schedules_warn);
    define_seconds("baton.health_pending_warn",
                   "Time the oldest due pending delivery has waited at which baton.health warns.",
                   &health_pending_warn);
    define_seconds("baton.priority_aging",
                   "Time a due pending delivery waits behind higher priorities before baton.age_pending raises it "
                   "to the highest pending in its tenant and target (0: never).",
                   &priority_aging);
}

void define_reaper() {
    DefineCustomStringVariable(
        "baton.reaper_databases",
        "Databases in which the pg_baton reaper runs: '*' for every database with pg_baton, or a "
        "comma-separated list (needs the preload).",
        "One background worker per database served, started by the pg_baton launcher. Takes effect at "
        "server start, and only with shared_preload_libraries = 'pg_baton'; empty: no reaper.",
        &reaper_databases, "*", process_shared_preload_libraries_in_progress ? PGC_POSTMASTER : PGC_SIGHUP, 0,
        nullptr, nullptr, nullptr);
    DefineCustomIntVariable("baton.reaper_interval", "Time the pg_baton reaper sleeps between rounds.",
                            "A round reaps batch after batch until a batch comes back short.", &reaper_interval_ms,
                            reaper_interval_ms, 10, 3600 * 1000, PGC_SIGHUP, GUC_UNIT_MS, nullptr, nullptr,
                            nullptr);
    DefineCustomIntVariable("baton.reaper_batch", "Expired leases the pg_baton reaper returns per transaction.",
                            nullptr, &reaper_batch, reaper_batch, 1, limits::kMaxReapRows, PGC_SIGHUP, 0, nullptr,
                            nullptr, nullptr);
}

}  // namespace

void define() {
    DefineCustomIntVariable("baton.max_payload_bytes",
                            "Largest payload, binding or result pg_baton accepts, in bytes.", nullptr,
                            &max_payload_bytes, limits::kDefaultMaxPayloadBytes, 1024, 64 * 1024 * 1024, PGC_SUSET,
                            GUC_UNIT_BYTE, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable("baton.notify",
                             "Sends a NOTIFY on the wake-up channel of (tenant, target) when a delivery is enqueued.",
                             nullptr, &notify, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable("baton.direct_access",
                             "Claims and finishes through direct heap and index access rather than SQL statements.",
                             "Off: the same calls run as SPI statements (slower; for comparison and diagnosis).",
                             &direct_access, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable("baton.authorization_cache",
                             "Keeps the tenants found writable and the targets' bound roles across transactions.",
                             "Off: every writing call reads baton.tenants and baton.target_bindings again (for "
                             "measuring the cache; a change takes effect at the next call either way).",
                             &authorization_cache, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable("baton.count_events",
                             "Counts each delivery's enqueue, claim, finish, failure, retry, cancel, reap and redrive "
                             "in baton.delivery_counters.",
                             "Off: nothing is counted (for measuring what the counters cost).", &count_events, true,
                             PGC_SUSET, 0, nullptr, nullptr, nullptr);
    define_health();
    define_reaper();
    if (process_shared_preload_libraries_in_progress)
        DefineCustomIntVariable("baton.claim_hint_targets",
                                "Targets whose claim position pg_baton keeps in shared memory.",
                                "Claims of other targets scan from the top.", &claim_hint_targets,
                                claim_hint_targets, 0, 1000000, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    if (process_shared_preload_libraries_in_progress)
        DefineCustomIntVariable("baton.counted_targets",
                                "Targets of tenants whose delivery counts pg_baton keeps in shared memory until the "
                                "reaper writes them into baton.event_counts.",
                                "Counts of other targets are written by the committing transaction itself.",
                                &counted_targets, counted_targets, 0, 1000000, PGC_POSTMASTER, 0, nullptr, nullptr,
                                nullptr);
}

}  // namespace baton::settings
