// The module: Postgres' magic block and _PG_init.
#include "core/claim_hint.hpp"  // (core headers before Postgres headers)
#include "pg/access/fence.hpp"
#include "pg/citus/citus.hpp"
#include "pg/deliveries/claim_hints.hpp"
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
    if (process_shared_preload_libraries_in_progress) {
        baton::pg::launcher::init();
        baton::pg::citus::install_hooks();
    }
    MarkGUCPrefixReserved("baton");
    baton::pg::fence::init();
    baton::pg::invalidation::init();
    baton::pg::claim_hints::init();
}

}  // extern "C"
