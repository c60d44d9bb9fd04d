// Workflow definitions as the Postgres layer keeps them: jsonb in baton.workflows,
// read back into the core's plain structs.
#pragma once

#include "core/definition.hpp"
#include "core/json.hpp"
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

// The canonical text of a jsonb value (palloc'd), as jsonb prints it.
char* jsonb_text(const Jsonb* jb);
// A jsonb value read into the core's JSON tree (22023 when it is not UTF-8 or nests
// deeper than the core's reader takes).
json::Value jsonb_value(const Jsonb* jb);

}  // namespace baton::pg
