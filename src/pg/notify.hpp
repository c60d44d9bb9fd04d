// The NOTIFY an enqueue sends, so that idle workers wake up (docs/wakeups.md).
#pragma once

#include "pg/boundary.hpp"

namespace baton::pg::notify {

// Queues NOTIFY baton_enqueue {"tenant": ..., "target": ...} when baton.notify is on;
// Postgres sends it at commit, once per distinct payload.
void enqueued(const pg_uuid_t* tenant, const text* target);

}  // namespace baton::pg::notify
