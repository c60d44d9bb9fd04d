// The module: Postgres' magic block, _PG_init and the GUCs.
#include "core/claim_hint.hpp"
#include "core/limits.hpp"
#include "core/tenant.hpp"
#include "pg/citus/citus.hpp"
#include "pg/deliveries/claim_hints.hpp"
#include "pg/access/fence.hpp"
#include "pg/runtime/invalidation.hpp"
#include "pg/workers/launcher.hpp"
#include "pg/runtime/postgres.hpp"
#include "pg/workers/reaper.hpp"
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

namespace {

// One threshold of baton.health in seconds, any user may SET it (0 to a day).
void define_seconds(const char* name, const char* description, int* variable) {
    DefineCustomIntVariable(name, description, nullptr, variable, *variable, 0, 86400, PGC_USERSET, GUC_UNIT_S,
                            nullptr, nullptr, nullptr);
}

}  // namespace

void define_health_settings() {
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
}
}  // namespace baton::settings

extern "C" {

PG_MODULE_MAGIC;

void _PG_init(void);

// Defines the GUCs and reserves the "baton." prefix.
void _PG_init(void) {
    DefineCustomIntVariable("baton.max_payload_bytes",
                            "Largest payload, binding or result pg_baton accepts, in bytes.", nullptr,
                            &baton::settings::max_payload_bytes, baton::limits::kDefaultMaxPayloadBytes,
                            1024, 64 * 1024 * 1024, PGC_SUSET, GUC_UNIT_BYTE, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable("baton.notify", "Sends a NOTIFY on the wake-up channel of (tenant, target) when a delivery is enqueued.",
                             nullptr, &baton::settings::notify, true, PGC_USERSET, 0, nullptr, nullptr,
                             nullptr);
    DefineCustomBoolVariable("baton.direct_access",
                             "Claims and finishes through direct heap and index access rather than SQL statements.",
                             "Off: the same calls run as SPI statements (slower; for comparison and diagnosis).",
                             &baton::settings::direct_access, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable("baton.authorization_cache",
                             "Keeps the tenants found writable and the targets' bound roles across transactions.",
                             "Off: every writing call reads baton.tenants and baton.target_bindings again (for "
                             "measuring the cache; a change takes effect at the next call either way).",
                             &baton::settings::authorization_cache, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    baton::settings::define_health_settings();
    // The background reaper: its GUCs always, its launcher only when preloaded.
    baton::pg::reaper::define_settings();
    if (process_shared_preload_libraries_in_progress) baton::pg::launcher::init();
    if (process_shared_preload_libraries_in_progress) baton::pg::citus::install_hooks();
    MarkGUCPrefixReserved("baton");
    baton::pg::fence::init();
    baton::pg::invalidation::init();
    baton::pg::claim_hints::init();
}

}  // extern "C"
