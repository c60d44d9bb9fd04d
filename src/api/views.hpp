// The views pg_baton grants to roles, on a distributed install (see views.cpp).
#pragma once

#include "pg/runtime/spi.hpp"

namespace baton::api {

// From baton.distribute(), on the coordinator: gives baton.delivery_stats,
// baton.run_stats and baton.schedules (those the installed version has) a body that
// reads a function of their own, which runs the view's one-node query as the
// extension's owner, and grants EXECUTE on each function to the roles that may select
// its view. Idempotent: a view that reads its function already keeps it (its readers
// get EXECUTE again); one an update redefined gets it back.
void serve_views_by_functions(pg::Spi& spi);

}  // namespace baton::api
