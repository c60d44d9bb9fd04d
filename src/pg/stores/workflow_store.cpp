// Workflow definitions (see workflow_store.hpp).
#include <cstring>
#include <string>

#include "core/definition.hpp"
#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "pg/runtime/args.hpp"
#include "pg/runtime/jsonb.hpp"
#include "pg/runtime/locks.hpp"
#include "pg/stores/workflow_store.hpp"

namespace baton::pg {

namespace {

// The decide column holds the function's schema-qualified signature: read as the
// function that text finds now (NULL when none does).
#define BATON_DECIDE_NOW "pg_catalog.to_regprocedure(w.decide)::pg_catalog.oid"

KeptPlan g_latest = {
    "SELECT w.version, w.definition, " BATON_DECIDE_NOW ", w.decide IS NOT NULL FROM baton.workflows w "
    "WHERE w.name OPERATOR(pg_catalog.=) $1 ORDER BY w.version DESC LIMIT 1",
    1, {TEXTOID}, nullptr};

KeptPlan g_version = {
    "SELECT w.version, w.definition, " BATON_DECIDE_NOW ", w.decide IS NOT NULL FROM baton.workflows w "
    "WHERE w.name OPERATOR(pg_catalog.=) $1 AND w.version OPERATOR(pg_catalog.=) $2",
    2, {TEXTOID, INT4OID}, nullptr};

KeptPlan g_latest_definition = {
    "SELECT w.version, w.definition OPERATOR(pg_catalog.=) $2 AND "
    "COALESCE(" BATON_DECIDE_NOW " OPERATOR(pg_catalog.=) $3::pg_catalog.oid, w.decide IS NULL AND $3 IS NULL) "
    "FROM baton.workflows w "
    "WHERE w.name OPERATOR(pg_catalog.=) $1 ORDER BY w.version DESC LIMIT 1",
    3, {TEXTOID, JSONBOID, REGPROCEDUREOID}, nullptr};

KeptPlan g_insert_definition = {
    "INSERT INTO baton.workflows (name, version, definition, decide) VALUES ($1, $2, $3, $4)",
    4, {TEXTOID, INT4OID, JSONBOID, TEXTOID}, nullptr};

// The advisory lock that orders the definers of one workflow name, until commit.
void lock_definers(const text* name) {
    guard([name] {
        uint32 hash = static_cast<uint32>(
            hash_bytes(reinterpret_cast<const unsigned char*>(VARDATA_ANY(name)), VARSIZE_ANY_EXHDR(name)));
        LOCKTAG tag = locks::tag(locks::Purpose::kDefineWorkflow, static_cast<uint64>(hash) << 32);
        (void)LockAcquire(&tag, ExclusiveLock, false, false);
    });
}

}  // namespace

// Reads the row of the version asked for and parses its definition (22023 from the
// core for a stored definition it no longer accepts). Read and parsed on every call, not
// cached per backend: a cache would still have to read the row to notice a user's
// UPDATE or DELETE of it (row writes send no relcache invalidation), and the parse it
// would save is a small share of a transition (docs/internals/performance.md, "Workflows").
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
    Workflow wf{spi.int32_at(0, 1), definition::parse_definition(jsonb_value(jb)), spi.bool_at(0, 4),
                spi.oid_at(0, 3)};
    return wf;
}

// Each value is read by its type's input function, as the statements will read it.
std::optional<std::string> server_fault(const definition::Definition& def) {
    for (const definition::StageDef& stage : def.stages) {
        const char* delay = stage.retry_delay.c_str();
        std::int64_t usec = -1;
        Interval* iv = nullptr;
        if (attempt([delay, &iv] {
                iv = DatumGetIntervalP(DirectFunctionCall3(interval_in, CStringGetDatum(delay),
                                                           ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)));
            }) == nullptr)
            usec = interval_usec(iv);
        try {
            delivery::check_delay_usec(usec);
        } catch (const Error&) {
            return "Stage \"" + stage.name + "\" has retry_delay " + json::excerpt(stage.retry_delay) +
                   "; it must read as an interval of zero to 365 days.";
        }
        for (const definition::NextEntry& entry : stage.next) {
            if (entry.when.empty()) continue;
            const char* path = entry.when.c_str();
            if (ErrorData* e = attempt([path] { (void)DirectFunctionCall1(jsonpath_in, CStringGetDatum(path)); }))
                return "Stage \"" + stage.name + "\" has a `when` that is not a jsonpath: " +
                       json::excerpt(entry.when) + " (" + (e->message ? e->message : "syntax error") + ").";
        }
    }
    return std::nullopt;
}

// Identical means the same definition whose stored decide names the same function now:
// a function dropped and created again with the same signature is found by its name, as
// a transition finds it. Stored by its schema-qualified signature, which pg_dump and
// pg_upgrade carry as it is (an oid neither keeps).
int store_version(Spi& spi, text* name, Jsonb* definition, Oid decide) {
    lock_definers(name);
    Datum values[4] = {PointerGetDatum(name), JsonbPGetDatum(definition), ObjectIdGetDatum(decide), 0};
    char latest_nulls[4] = "   ";
    if (decide == InvalidOid) latest_nulls[2] = 'n';
    int version = 1;
    if (spi.run(g_latest_definition, values, latest_nulls) == 1) {
        if (spi.bool_at(0, 2)) return spi.int32_at(0, 1);
        version = spi.int32_at(0, 1) + 1;
    }
    Datum stored = 0;
    if (decide != InvalidOid)
        stored = guard([decide] { return PointerGetDatum(cstring_to_text(format_procedure_qualified(decide))); });
    Datum insert[4] = {PointerGetDatum(name), Int32GetDatum(version), JsonbPGetDatum(definition), stored};
    char nulls[5] = "    ";
    if (decide == InvalidOid) nulls[3] = 'n';
    spi.run(g_insert_definition, insert, nulls);
    return version;
}

}  // namespace baton::pg
