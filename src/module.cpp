// The module: Postgres' magic block, _PG_init and the GUCs.
#include "core/claim_hint.hpp"
#include "core/limits.hpp"
#include "core/tenant.hpp"
#include "pg/citus.hpp"
#include "pg/claim_hints.hpp"
#include "pg/fence.hpp"
#include "pg/launcher.hpp"
#include "pg/owner.hpp"
#include "pg/postgres.hpp"
#include "pg/reaper.hpp"
#include "pg/relations.hpp"
#include "pg/restore_load.hpp"
#include "pg/settings.hpp"

namespace baton::settings {
int max_payload_bytes = limits::kDefaultMaxPayloadBytes;
bool notify = true;
bool direct_access = true;
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
    DefineCustomBoolVariable("baton.notify", "Sends NOTIFY baton_enqueue when a delivery is enqueued.",
                             nullptr, &baton::settings::notify, true, PGC_USERSET, 0, nullptr, nullptr,
                             nullptr);
    DefineCustomBoolVariable("baton.direct_access",
                             "Claims and finishes through direct heap and index access rather than SQL statements.",
                             "Off: the same calls run as SPI statements (slower; for comparison and diagnosis).",
                             &baton::settings::direct_access, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    // The background reaper: its GUCs always, its launcher only when preloaded.
    baton::pg::reaper::define_settings();
    if (process_shared_preload_libraries_in_progress) baton::pg::launcher::init();
    if (process_shared_preload_libraries_in_progress) baton::pg::citus::install_hooks();
    MarkGUCPrefixReserved("baton");
    baton::pg::fence::init();
    baton::pg::owner::init();
    baton::pg::relations::init();
    baton::pg::restore_load::init();
    baton::pg::claim_hints::init();
}

}  // extern "C"
