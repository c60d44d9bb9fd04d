// What the stage calls of a run's owner share (see owner_call.hpp).
#include <string>

#include "core/run.hpp"

#include "pg/runtime/args.hpp"
#include "api/owner_call.hpp"

namespace baton::api {

// The call's run as text ("run <uuid>"), for the messages that name it.
std::string run_text(const OwnerCall& call) {
    return "run " + pg::uuid_text(call.run_id);
}

// Reads them in the order every owner call declares them; 22004 names a NULL one.
OwnerCall owner_call_args(FunctionCallInfo fcinfo) {
    return {pg::uuid_arg(fcinfo, 0, "tenant"), pg::uuid_arg(fcinfo, 1, "run_id"),
            pg::int64_arg(fcinfo, 2, "generation")};
}

}  // namespace baton::api
