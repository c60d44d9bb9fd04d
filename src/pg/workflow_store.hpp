// Workflow definitions as the Postgres layer keeps them: jsonb in baton.workflows,
// read back into the core's plain structs (through pg/jsonb's tree).
#pragma once

#include "core/definition.hpp"
// (core headers before Postgres headers)
#include "pg/spi.hpp"

namespace baton::pg {

struct Workflow {
    int version;
    definition::Definition definition;
    Oid decide;  // InvalidOid: declarative routing
};

// Loads `version` of the named workflow (0: the latest); DU008 when there is none.
Workflow load_workflow(Spi& spi, text* name, int version);

}  // namespace baton::pg
