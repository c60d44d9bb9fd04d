// What the stage calls of a run's owner share (stages.cpp and transition.cpp): their
// first three arguments and the run's name in messages.
#pragma once

#include <cstdint>
#include <string>

#include "pg/stores/run_store.hpp"

namespace baton::api {

// The arguments every owner call carries.
struct OwnerCall {
    pg_uuid_t* tenant;
    pg_uuid_t* run_id;
    std::int64_t generation;

    // The run as the stores address it.
    pg::runs::Key run() const { return {tenant, run_id}; }
};

// Reads (tenant, run_id, generation), the first three arguments of every owner call.
OwnerCall owner_call_args(FunctionCallInfo fcinfo);

// The call's run as text ("run <uuid>"), for the messages that name it.
std::string run_text(const OwnerCall& call);

}  // namespace baton::api
