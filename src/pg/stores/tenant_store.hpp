// The statements the entry points run on baton.tenants: a tenant's creation and the
// change of its state. The fence (pg/access/fence.hpp) reads a tenant's state on every write,
// by a direct probe of the primary key; which moves are allowed is src/core/tenant.hpp's.
#pragma once

#include <optional>

#include "core/tenant.hpp"
// (core headers before Postgres headers)
#include "pg/runtime/spi.hpp"

namespace baton::pg::tenants {

// Inserts an active tenant; false when it exists already (in any state).
bool insert(Spi& spi, pg_uuid_t* tenant);
// The tenant's row locked (FOR UPDATE) and its state; nullopt when absent, XX000 for a
// state the core does not know.
std::optional<tenant::State> lock(Spi& spi, pg_uuid_t* tenant);
// Writes the new state and when it changed.
void set_state(Spi& spi, pg_uuid_t* tenant, tenant::State to);

}  // namespace baton::pg::tenants
