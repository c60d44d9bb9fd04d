// The module: Postgres' magic block and _PG_init.
// (core headers before Postgres headers)
#include "core/claim_hint.hpp"
#include "core/key_limit.hpp"
#include "core/event_count.hpp"
#include "pg/access/fence.hpp"
#include "pg/citus/hooks.hpp"
#include "pg/deliveries/claim_hints.hpp"
#include "pg/deliveries/event_counts.hpp"
#include "pg/deliveries/key_admission.hpp"
#include "pg/runtime/invalidation.hpp"
#include "pg/runtime/postgres.hpp"
#include "pg/runtime/settings.hpp"
#include "pg/workers/launcher.hpp"

extern "C" {

PG_MODULE_MAGIC;

void _PG_init(void);

// Defines the settings and reserves the "baton." prefix; when preloaded, the launcher of
// the reapers and the hooks in front of Citus'.
void _PG_init(void) {
    baton::settings::define();
    baton::pg::citus::install_runtime_hooks();
    if (process_shared_preload_libraries_in_progress) {
        baton::pg::launcher::init();
        baton::pg::citus::install_hooks();
    }
    MarkGUCPrefixReserved("baton");
    baton::pg::fence::init();
    // Every per-backend cache (pg/runtime/cache) subscribes itself when it first keeps something.
    baton::pg::invalidation::init();
    baton::pg::claim_hints::init();
    // Registered before key_admission: transaction callbacks run newest first, so the
    // counts are added after the keys are settled.
    baton::pg::event_counts::init();
    baton::pg::key_admission::init();
}

}  // extern "C"
