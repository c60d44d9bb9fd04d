// The module: Postgres' magic block and _PG_init.
// (core headers before Postgres headers)
#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "core/tenant.hpp"
#include "pg/access/authz_cache.hpp"
#include "pg/access/fence.hpp"
#include "pg/access/restore_load.hpp"
#include "pg/citus/citus.hpp"
#include "pg/citus/hooks.hpp"
#include "pg/deliveries/claim_hints.hpp"
#include "pg/deliveries/delivery_direct.hpp"
#include "pg/deliveries/side_rows.hpp"
#include "pg/runtime/invalidation.hpp"
#include "pg/runtime/notify.hpp"
#include "pg/runtime/owner.hpp"
#include "pg/runtime/relations.hpp"
#include "pg/runtime/schema_version.hpp"
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
    baton::pg::invalidation::init();
    // Every per-backend cache forgets what an invalidation touches.
    namespace pg = baton::pg;
    for (pg::invalidation::Forget forget : {pg::relations::forget, pg::side_rows::forget, pg::restore_load::forget,
                                            pg::citus::forget, pg::notify::forget, pg::authz_cache::forget,
                                            pg::owner::forget, pg::schema_version::forget,
                                            pg::delivery_direct::forget})
        pg::invalidation::subscribe(forget);
    baton::pg::claim_hints::init();
}

}  // extern "C"
