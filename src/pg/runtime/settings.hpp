// The settings (GUCs) of pg_baton, each defined once, in settings.cpp (define(), from
// _PG_init), and read through these variables.
#pragma once

namespace baton::settings {

extern int max_payload_bytes;  // baton.max_payload_bytes: largest payload, binding or result
extern bool notify;            // baton.notify: NOTIFY the wake-up channel of each inserted delivery
extern bool direct_access;     // baton.direct_access: claim and finish without SPI (pg/deliveries/delivery_store.hpp)
extern bool authorization_cache;  // baton.authorization_cache: who may write kept across transactions (pg/access/authz_cache.hpp)
extern bool count_events;  // baton.count_events: the deliveries' counters (pg/deliveries/event_counts.hpp); superuser

// The thresholds of baton.health (core/health.hpp), any user may SET them: seconds, but
// the dead rows' fraction and count.
extern int health_xmin_warn;           // baton.health_xmin_warn
extern int health_xmin_critical;       // baton.health_xmin_critical
extern double health_dead_rows_warn;   // baton.health_dead_rows_warn
extern int health_dead_rows_min;       // baton.health_dead_rows_min
extern int health_expired_warn;        // baton.health_expired_warn
extern int health_stuck_after;         // baton.health_stuck_after
extern int health_schedules_warn;      // baton.health_schedules_warn
extern int health_pending_warn;        // baton.health_pending_warn
extern int priority_aging;             // baton.priority_aging, seconds (0: off)

// The background reaper (pg/workers/reaper.hpp). baton.reaper_databases is
// PGC_POSTMASTER when preloading (it decides which workers exist), and only
// informational otherwise; pg/workers/served.hpp reads it.
extern char* reaper_databases;  // baton.reaper_databases: '*', a list of names, or empty
extern int reaper_interval_ms;  // baton.reaper_interval
extern int reaper_batch;        // baton.reaper_batch: expired leases per transaction

// baton.claim_hint_targets: the claim hints' capacity in shared memory
// (pg/deliveries/claim_hints.hpp). PGC_POSTMASTER: defined only while preloading
// (Postgres makes a later definition FATAL); without the preload it does not exist.
extern int claim_hint_targets;
// baton.counted_targets: the (tenant, target) pairs whose counts shared memory holds
// until the reaper's flush (pg/deliveries/event_counts.hpp). PGC_POSTMASTER, as above.
extern int counted_targets;

// Defines every setting above (from _PG_init, before the prefix is reserved).
void define();

}  // namespace baton::settings
