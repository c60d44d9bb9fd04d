// The GUCs of pg_baton, defined in src/module.cpp (_PG_init).
#pragma once

namespace baton::settings {

extern int max_payload_bytes;  // baton.max_payload_bytes: largest payload, binding or result
extern bool notify;            // baton.notify: NOTIFY the wake-up channel of each inserted delivery
extern bool direct_access;     // baton.direct_access: claim and finish without SPI (pg/delivery_store.hpp)

}  // namespace baton::settings
