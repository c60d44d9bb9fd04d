// Workflow definitions: define_workflow, which checks a definition (the core, then what
// only the server can judge) and stores it as the next version of its name.
#include <optional>
#include <string>
#include <utility>

#include "core/definition.hpp"
#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/run.hpp"
#include "pg/runtime/args.hpp"
#include "pg/runtime/decide.hpp"
#include "pg/runtime/jsonb.hpp"
#include "pg/access/read_only.hpp"
#include "pg/stores/workflow_store.hpp"

namespace baton::api {

namespace {

// Refuses a definition of workflow `name` (22023), with a detail naming the fault.
[[noreturn]] void invalid_definition(const text* name, std::string detail, std::string hint = {}) {
    throw Error(SqlState::kInvalidParameterValue, "invalid definition of workflow " + pg::quoted(name),
                std::move(detail), std::move(hint));
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
    if (std::optional<std::string> fault = pg::server_fault(def)) invalid_definition(name, *fault);
    Oid decide = InvalidOid;
    try {
        if (!def.decide.empty()) decide = pg::decide::resolve(def.decide);
    } catch (const Error& e) {
        invalid_definition(name, e.detail());
    }

    pg::Spi spi;
    PG_RETURN_INT32(pg::store_version(spi, name, definition, decide));
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_define_workflow, baton::api::define_workflow)
