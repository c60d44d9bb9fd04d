// The GUCs of pg_baton, defined in src/module.cpp (_PG_init).
#pragma once

namespace baton::settings {

extern int max_payload_bytes;  // baton.max_payload_bytes: largest payload, binding or result
extern bool notify;            // baton.notify: NOTIFY the wake-up channel of each inserted delivery
extern bool direct_access;     // baton.direct_access: claim and finish without SPI (pg/deliveries/delivery_store.hpp)
extern bool authorization_cache;  // baton.authorization_cache: who may write kept across transactions (pg/access/authz_cache.hpp)

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

// Defines the thresholds' GUCs (from _PG_init).
void define_health_settings();

}  // namespace baton::settings
