// Workflow definitions as the Postgres layer keeps them: jsonb in baton.workflows,
// read back into the core's plain structs (through pg/runtime/jsonb's tree).
#pragma once

#include <optional>
#include <string>

#include "core/definition.hpp"
// (core headers before Postgres headers)
#include "pg/runtime/spi.hpp"

namespace baton::pg {

struct Workflow {
    int version;
    definition::Definition definition;
    bool has_decide;  // false: declarative routing
    Oid decide;       // the function its name finds now; InvalidOid when it finds none
};

// Loads `version` of the named workflow (0: the latest); DU008 when there is none.
Workflow load_workflow(Spi& spi, text* name, int version);

// What only the server can judge of a definition the core accepted: each retry_delay
// reads as an interval of zero to 365 days, and each `when` as a jsonpath. The first
// fault as a detail, or nullopt.
std::optional<std::string> server_fault(const definition::Definition& def);

// Stores a checked definition (resolving to `decide`, InvalidOid for none) as the next
// version of `name` and returns it; when it is identical to the latest version (the
// same definition, the same decide function) returns that version and stores nothing.
// One definer of a name at a time, so two new versions never collide.
int store_version(Spi& spi, text* name, Jsonb* definition, Oid decide);

}  // namespace baton::pg
