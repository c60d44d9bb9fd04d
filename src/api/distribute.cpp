// distribute: pg_baton's tables and functions handed to Citus, so that every tenant's
// rows live in one shard group and every call naming a tenant runs on its node.
#include <string>

#include "core/error.hpp"
#include "pg/boundary.hpp"
#include "pg/citus.hpp"
#include "pg/owner.hpp"
#include "pg/read_only.hpp"
#include "pg/spi.hpp"

namespace baton::api {

namespace {

// The tenant tables, distributed by their column "tenant" and colocated with
// baton.tenants, in an order that distributes each table a foreign key references
// before the table that holds the key (stages, markers and deliveries reference runs).
constexpr const char* kTenantTables[] = {"tenants", "runs", "target_bindings", "stages",
                                         "step_entries", "markers", "deliveries", "schedule_rows"};
// Global tables: one copy on every node (reference tables). baton.in_use stays a local
// table on each node: it records whether that node's own tables have been written to.
constexpr const char* kGlobalTables[] = {"workflows"};

// Refuses a call that cannot distribute: 55000 with what is missing and how to add it.
[[noreturn]] void refuse(const std::string& why, const std::string& detail, const std::string& hint) {
    throw Error(SqlState::kObjectNotInPrerequisiteState, "pg_baton cannot be distributed: " + why, detail, hint);
}

// Checks what distributing needs: the caller acts for the extension's owner, Citus is
// installed, this node is the coordinator and at least one worker is active.
void check_prerequisites(pg::Spi& spi, Oid caller) {
    Oid owner = pg::guard([] { return pg::owner::of_extension(); });
    if (!pg::guard([caller, owner] { return has_privs_of_role(caller, owner); }))
        throw Error(SqlState::kInsufficientPrivilege, "permission denied for function baton.distribute",
                    "Only the owner of extension pg_baton (or a member of that role) distributes it.");
    if (!pg::citus::installed())
        refuse("extension \"citus\" is not installed in this database",
               "baton.distribute() hands pg_baton's tables and functions to Citus.",
               "Install Citus on every node, preload it before pg_baton (shared_preload_libraries = "
               "'citus,pg_baton'), run CREATE EXTENSION citus and add the workers with citus_add_node().");
    spi.exec("SELECT pg_catalog.citus_is_coordinator()");
    if (!spi.bool_at(0, 1))
        refuse("this node is not the coordinator", "Citus distributes tables from its coordinator.",
               "Run baton.distribute() on the coordinator.");
    spi.exec("SELECT pg_catalog.count(*) FROM pg_catalog.citus_get_active_worker_nodes()");
    if (spi.int64_at(0, 1) == 0)
        refuse("no citus worker node is added", "Tenant tables are distributed over the worker nodes.",
               "Add workers on the coordinator with citus_add_node(host, port), then call baton.distribute() again.");
}

// Sets a Citus setting for the rest of this call only (a GUC nesting level of its own,
// undone by restore_settings()), as a function's SET clause would.
int set_for_call(const char* name, const char* value) {
    return pg::guard([name, value] {
        int level = NewGUCNestLevel();
        (void)set_config_option(name, value, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
        return level;
    });
}
void restore_settings(int level) {
    pg::guard([level] { AtEOXact_GUC(true, level); });
}

// create_distributed_table (colocated with baton.tenants) or create_reference_table for
// one table, unless Citus has it already.
void distribute_table(pg::Spi& spi, const char* table, bool tenant_table) {
    std::string name = std::string("'baton.") + table + "'::pg_catalog.regclass";
    std::string call = tenant_table
                           ? "pg_catalog.create_distributed_table(" + name + ", 'tenant', colocate_with => " +
                                 (std::string(table) == "tenants" ? "'none'" : "'baton.tenants'") + ")"
                           : "pg_catalog.create_reference_table(" + name + ")";
    spi.exec(("SELECT " + call + " WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition p "
                                 "WHERE p.logicalrelid OPERATOR(pg_catalog.=) " + name + ")")
                 .c_str());
}

// Every function whose first argument is the tenant, distributed by it and colocated
// with baton.tenants, unless Citus has it already: a top-level call then runs on the
// node that holds the tenant.
void distribute_functions(pg::Spi& spi) {
    spi.exec(
        "SELECT p.oid::pg_catalog.regprocedure::pg_catalog.text FROM pg_catalog.pg_proc p "
        "WHERE p.pronamespace OPERATOR(pg_catalog.=) 'baton'::pg_catalog.regnamespace "
        "AND p.pronargs OPERATOR(pg_catalog.>) 0 "
        "AND p.proargtypes[0] OPERATOR(pg_catalog.=) 'pg_catalog.uuid'::pg_catalog.regtype "
        "AND p.proargnames[1] OPERATOR(pg_catalog.=) 'tenant' "
        "AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_object o "
        "WHERE o.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass "
        "AND o.objid OPERATOR(pg_catalog.=) p.oid AND o.distribution_argument_index IS NOT NULL) "
        "ORDER BY 1");
    std::uint64_t n = SPI_processed;
    std::string calls;
    for (std::uint64_t i = 0; i < n; i++) {
        const char* fn = spi.cstring_at(i, 1);
        const char* quoted = pg::guard([fn] { return quote_literal_cstr(fn); });
        calls += std::string("SELECT pg_catalog.create_distributed_function(") + quoted +
                 "::pg_catalog.regprocedure, '$1', colocate_with => 'baton.tenants');";
    }
    // One statement per function, after the list is read (each replaces SPI's result).
    std::string::size_type from = 0;
    while (from < calls.size()) {
        std::string::size_type end = calls.find(';', from);
        spi.exec(calls.substr(from, end - from).c_str());
        from = end + 1;
    }
}

// Moves each worker's id sequences (deliveries' identity, entry_id_seq) to a range of
// its own: group g starts at g << 48, so ids are unique across the cluster whichever
// node assigns them (the coordinator, group 0, keeps 1 .. 2^48 for the rows inserted
// through it). Sequences already in their range are left alone: idempotent, and a
// worker added later gets its range on the next call.
void separate_id_ranges(pg::Spi& spi) {
    spi.exec(
        "SELECT pg_catalog.bool_and(r.success), pg_catalog.string_agg(r.result, '; ') "
        "FROM pg_catalog.run_command_on_workers($cmd$"
        "SELECT pg_catalog.count(pg_catalog.setval(pg_catalog.format('baton.%I', q.sequencename)::pg_catalog.regclass, "
        "(g.groupid::pg_catalog.int8 OPERATOR(pg_catalog.<<) 48) OPERATOR(pg_catalog.+) 1, false)) "
        "FROM pg_catalog.pg_sequences q, pg_catalog.pg_dist_local_group g "
        "WHERE q.schemaname OPERATOR(pg_catalog.=) 'baton' "
        "AND q.sequencename OPERATOR(pg_catalog.=) ANY ('{deliveries_id_seq,entry_id_seq}'::pg_catalog.text[]) "
        "AND g.groupid OPERATOR(pg_catalog.>) 0 "
        "AND COALESCE(q.last_value, 0) OPERATOR(pg_catalog.<) (g.groupid::pg_catalog.int8 OPERATOR(pg_catalog.<<) 48)"
        "$cmd$) r");
    if (!spi.bool_at(0, 1)) {
        const char* result = spi.cstring_at(0, 2);
        throw Error(SqlState::kObjectNotInPrerequisiteState, "pg_baton could not give the workers their id ranges",
                    result ? result : "", "Check that pg_baton is installed on every worker.");
    }
}

// baton.distribute(): distributes pg_baton on a Citus coordinator with workers. The
// tenant tables by "tenant", colocated; workflows as a reference table; every function
// that takes the tenant first by that argument, colocated with the tables. Idempotent:
// what Citus has already is left as it is. Each worker's id sequences get a range of
// their own (separate_id_ranges). Triggers on distributed tables need
// citus.enable_unsafe_triggers, which is set for this call only.
Datum distribute(FunctionCallInfo fcinfo, Oid caller) {
    pg::require_read_write("baton.distribute");
    pg::Spi spi;
    check_prerequisites(spi, caller);
    int level = set_for_call("citus.enable_unsafe_triggers", "on");
    for (const char* table : kTenantTables) distribute_table(spi, table, true);
    for (const char* table : kGlobalTables) distribute_table(spi, table, false);
    distribute_functions(spi);
    separate_id_ranges(spi);
    restore_settings(level);
    PG_RETURN_VOID();
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_distribute, baton::api::distribute)
