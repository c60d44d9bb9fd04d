// Where each worker stands in the fair claim's round over the tenants of a target
// (core/fair_share.hpp): kept in the backend across calls and transactions, per
// (calling role, target), so that a worker's next call goes on from the tenant its last
// one served. Nothing in it is durable or shared: a new session starts its round at the
// first tenant with work.
#pragma once

#include "core/fair_share.hpp"
// (core headers before Postgres headers)
#include "pg/runtime/postgres.hpp"

namespace baton::pg::fair_turns {

struct Place {
    bool known;          // tenant is where the round stands
    pg_uuid_t tenant;
    fair_share::Turn turn;
};

// The caller's place for target, made (not known) on first use; nullptr for a target
// longer than the backend keeps (256 bytes), whose calls each start their own round.
Place* place(Oid role, const char* target, int target_len);

}  // namespace baton::pg::fair_turns
