// Workflow definitions: define_workflow, which checks a definition (the core, then what
// only the server can judge) and stores it as the next version of its name.
#include <string>
#include <utility>

#include "core/definition.hpp"
#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/run.hpp"
#include "pg/args.hpp"
#include "pg/decide.hpp"
#include "pg/jsonb.hpp"
#include "pg/locks.hpp"
#include "pg/read_only.hpp"
#include "pg/workflow_store.hpp"

namespace baton::api {

namespace {

pg::KeptPlan g_latest_definition = {
    "SELECT w.version, w.definition OPERATOR(pg_catalog.=) $2 AND "
    "COALESCE(w.decide::pg_catalog.oid OPERATOR(pg_catalog.=) $3::pg_catalog.oid, w.decide IS NULL AND $3 IS NULL) "
    "FROM baton.workflows w "
    "WHERE w.name OPERATOR(pg_catalog.=) $1 ORDER BY w.version DESC LIMIT 1",
    3, {TEXTOID, JSONBOID, REGPROCEDUREOID}, nullptr};

pg::KeptPlan g_insert_definition = {
    "INSERT INTO baton.workflows (name, version, definition, decide) VALUES ($1, $2, $3, $4)",
    4, {TEXTOID, INT4OID, JSONBOID, REGPROCEDUREOID}, nullptr};

// Refuses a definition of workflow `name` (22023), with a detail naming the fault.
[[noreturn]] void invalid_definition(const text* name, std::string detail, std::string hint = {}) {
    throw Error(SqlState::kInvalidParameterValue, "invalid definition of workflow " + pg::quoted(name),
                std::move(detail), std::move(hint));
}

// Refuses (22023) what only the server can judge: each retry_delay reads as an interval
// of zero to 365 days, and each `when` as a jsonpath.
void check_with_server(const text* name, const definition::Definition& def) {
    for (const definition::StageDef& stage : def.stages) {
        const char* delay = stage.retry_delay.c_str();
        std::int64_t usec = -1;
        Interval* iv = nullptr;
        if (pg::attempt([delay, &iv] {
                iv = DatumGetIntervalP(DirectFunctionCall3(interval_in, CStringGetDatum(delay),
                                                           ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)));
            }) == nullptr)
            usec = pg::interval_usec(iv);
        try {
            delivery::check_delay_usec(usec);
        } catch (const Error&) {
            invalid_definition(name,
                        "Stage \"" + stage.name + "\" has retry_delay " + json::excerpt(stage.retry_delay) +
                            "; it must read as an interval of zero to 365 days.");
        }
        for (const definition::NextEntry& entry : stage.next) {
            if (entry.when.empty()) continue;
            const char* path = entry.when.c_str();
            if (ErrorData* e = pg::attempt([path] { (void)DirectFunctionCall1(jsonpath_in, CStringGetDatum(path)); }))
                invalid_definition(name,
                            "Stage \"" + stage.name + "\" has a `when` that is not a jsonpath: " +
                                json::excerpt(entry.when) + " (" + (e->message ? e->message : "syntax error") + ").");
        }
    }
}

// baton.define_workflow(name, definition): validates the definition and stores it as
// the workflow's next version; an identical definition (resolving to the same decide
// function) returns the latest version.
Datum define_workflow(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.define_workflow");
    text* name = pg::text_arg(fcinfo, 0, "name");
    Jsonb* definition = pg::jsonb_arg(fcinfo, 1, "definition");
    check_label("name", pg::text_chars(name));
    pg::check_object_argument("definition", definition);
    json::Value tree;
    try {
        tree = pg::jsonb_value(definition);
    } catch (const Error& e) {
        // jsonb's own limits are wider than the core's tree (nesting, UTF-8 in SQL_ASCII).
        invalid_definition(name, e.detail());
    }
    definition::Definition def;
    try {
        def = definition::parse_definition(tree);
    } catch (const Error& e) {
        // The core judges the definition without knowing its name: name it here.
        if (e.state() != SqlState::kInvalidParameterValue) throw;
        invalid_definition(name, e.detail(), e.hint());
    }
    check_with_server(name, def);
    Oid decide = InvalidOid;
    try {
        if (!def.decide.empty()) decide = pg::decide::resolve(def.decide);
    } catch (const Error& e) {
        invalid_definition(name, e.detail());
    }

    // One definer of a name at a time, so two new versions never collide.
    std::string_view n = pg::text_view(name);
    uint32 hash = pg::guard([n] { return static_cast<uint32>(hash_bytes(reinterpret_cast<const unsigned char*>(n.data()), static_cast<int>(n.size()))); });
    pg::guard([hash] {
        LOCKTAG tag = pg::locks::tag(pg::locks::Purpose::kDefineWorkflow, static_cast<uint64>(hash) << 32);
        (void)LockAcquire(&tag, ExclusiveLock, false, false);
    });

    pg::Spi spi;
    // Identical: the same definition resolving to the same decide function (a function
    // dropped and created again is another function, so that is a new version).
    Datum values[3] = {PointerGetDatum(name), JsonbPGetDatum(definition), ObjectIdGetDatum(decide)};
    char latest_nulls[4] = "   ";
    if (decide == InvalidOid) latest_nulls[2] = 'n';
    int version = 1;
    if (spi.run(g_latest_definition, values, latest_nulls) == 1) {
        if (spi.bool_at(0, 2)) PG_RETURN_INT32(spi.int32_at(0, 1));
        version = spi.int32_at(0, 1) + 1;
    }
    Datum insert[4] = {PointerGetDatum(name), Int32GetDatum(version), JsonbPGetDatum(definition),
                       ObjectIdGetDatum(decide)};
    char nulls[5] = "    ";
    if (decide == InvalidOid) nulls[3] = 'n';
    spi.run(g_insert_definition, insert, nulls);
    PG_RETURN_INT32(version);
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_define_workflow, baton::api::define_workflow)
