// Workflow definitions (see workflow_store.hpp).
#include <cstring>
#include <string>

#include "core/definition.hpp"
#include "core/error.hpp"
#include "pg/args.hpp"
#include "pg/jsonb.hpp"
#include "pg/workflow_store.hpp"

namespace baton::pg {

namespace {

KeptPlan g_latest = {
    "SELECT w.version, w.definition, w.decide FROM baton.workflows w "
    "WHERE w.name OPERATOR(pg_catalog.=) $1 ORDER BY w.version DESC LIMIT 1",
    1, {TEXTOID}, nullptr};

KeptPlan g_version = {
    "SELECT w.version, w.definition, w.decide FROM baton.workflows w "
    "WHERE w.name OPERATOR(pg_catalog.=) $1 AND w.version OPERATOR(pg_catalog.=) $2",
    2, {TEXTOID, INT4OID}, nullptr};

}  // namespace

// Reads the row of the version asked for and parses its definition (22023 from the
// core for a stored definition it no longer accepts). Read and parsed on every call, not
// cached per backend: a cache would still have to read the row to notice a user's
// UPDATE or DELETE of it (row writes send no relcache invalidation), and the parse it
// would save is a small share of a transition (docs/performance.md, "What limits the rest").
Workflow load_workflow(Spi& spi, text* name, int version) {
    Datum values[2] = {PointerGetDatum(name), Int32GetDatum(version)};
    std::uint64_t n = version == 0 ? spi.run(g_latest, values, nullptr) : spi.run(g_version, values, nullptr);
    if (n == 0)
        throw Error(SqlState::kNotFound,
                    "workflow " + quoted(name) + (version == 0 ? "" : " version " + std::to_string(version)) +
                        " does not exist",
                    version == 0 ? "No version of it has been defined."
                                 : "Version " + std::to_string(version) + " of it has not been defined.",
                    "Define it with baton.define_workflow().");
    bool isnull = false;
    Datum def = spi.value(0, 2, &isnull);
    Jsonb* jb = guard([def] { return DatumGetJsonbP(def); });
    Workflow wf{spi.int32_at(0, 1), definition::parse_definition(jsonb_value(jb)), spi.oid_at(0, 3)};
    return wf;
}

}  // namespace baton::pg
