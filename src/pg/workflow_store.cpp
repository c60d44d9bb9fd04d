// Workflow definitions (see workflow_store.hpp).
#include <cstring>
#include <string>

#include "core/definition.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "pg/args.hpp"
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

char* jsonb_text(const Jsonb* jb) {
    return guard([jb] {
        return JsonbToCString(nullptr, const_cast<JsonbContainer*>(&jb->root), VARSIZE(jb));
    });
}

json::Value jsonb_value(const Jsonb* jb) {
    // The core reads UTF-8; text that cannot be converted is invalid JSON text to it.
    return json::parse(jsonb_utf8_text(jb));
}

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
