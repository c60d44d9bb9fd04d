// distribute: pg_baton's tables and functions handed to Citus, so that every tenant's
// rows live in one shard group and every call naming a tenant runs on its node.
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "pg/runtime/boundary.hpp"
#include "pg/citus/citus.hpp"
#include "pg/deliveries/side_rows.hpp"
#include "pg/runtime/owner.hpp"
#include "pg/access/read_only.hpp"
#include "pg/runtime/spi.hpp"
#include "api/update.hpp"
#include "api/views.hpp"

namespace baton::api {

namespace {

// The tenant tables, distributed by their column "tenant" and colocated with
// baton.tenants, in an order that distributes each table a foreign key references
// before the table that holds the key (stages, markers and deliveries reference runs),
// and the side tables (leases, ready) before deliveries, whose rows copied into their
// shards write their side rows into the shards of those.
constexpr const char* kTenantTables[] = {"tenants", "runs", "target_bindings", "stages",
                                         "step_entries", "markers", "leases", "ready", "deliveries", "schedule_rows"};
// Global tables: one copy on every node (reference tables); the wake-up secret is one, so
// that a channel has the same name on every node; a target paused everywhere is paused
// on every node. baton.in_use stays a local table on each node: it records whether that
// node's own tables have been written to; so does baton.event_counts: each node counts
// the calls that run there (pg/deliveries/event_counts.hpp).
constexpr const char* kGlobalTables[] = {"workflows", "wakeup_key", "paused_targets"};

// Refuses a call that cannot distribute: 55000 with what is missing and how to add it.
[[noreturn]] void refuse(const std::string& why, const std::string& detail, const std::string& hint) {
    throw Error(SqlState::kObjectNotInPrerequisiteState, "pg_baton cannot be distributed: " + why, detail, hint);
}

// Checks what distributing needs: the caller acts for the extension's owner, Citus is
// installed, this node is the coordinator, at least one worker is active, and pg_baton
// was not created or updated in this transaction: distribute() reaches the workers'
// copies of pg_baton over connections of their own (run_command_on_workers), which
// would wait for this transaction's locks on them, and Citus sees no deadlock there.
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
    if (pg::guard([] { return pg::owner::changed_in_this_transaction(); }))
        refuse("extension \"pg_baton\" was created or updated in this transaction",
               "baton.distribute() sets up the workers over connections of their own, which would wait for this "
               "transaction's locks on the workers' copies of pg_baton.",
               "Commit, then call baton.distribute() in a later transaction.");
}

// create_distributed_table (colocated with baton.tenants) or create_reference_table for
// one table, unless Citus has it already. Citus copies the rows the table holds here
// into its shards and leaves the local copy on disk, unseen: a global table's (the
// wake-up secret's row) is removed then, so that no stale copy of it stays behind.
// True when this call distributed it.
bool distribute_table(pg::Spi& spi, const char* table, bool tenant_table) {
    std::string name = std::string("'baton.") + table + "'::pg_catalog.regclass";
    std::string call = tenant_table
                           ? "pg_catalog.create_distributed_table(" + name + ", 'tenant', colocate_with => " +
                                 (std::string(table) == "tenants" ? "'none'" : "'baton.tenants'") + ")"
                           : "pg_catalog.create_reference_table(" + name + ")";
    spi.exec(("SELECT " + call + " WHERE NOT EXISTS (SELECT 1 FROM "
              "pg_catalog.pg_dist_partition p WHERE p.logicalrelid OPERATOR(pg_catalog.=) " + name + ")")
                 .c_str());
    bool distributed = SPI_processed == 1;
    if (!tenant_table && distributed)
        spi.exec(("SELECT pg_catalog.truncate_local_data_after_distributing_table(" + name + ")").c_str());
    return distributed;
}

// Every function whose first argument is the tenant, distributed by it and colocated
// with baton.tenants, unless Citus has it already: a top-level call then runs on the
// node that holds the tenant. Returns how many it distributed.
std::uint64_t distribute_functions(pg::Spi& spi) {
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
    return n;
}

// The statement that makes this node's shards of pg_baton's tables what their logical
// table is, run on every node (complete_shards()), in this order: it drops the CHECK,
// UNIQUE and EXCLUDE constraints an update dropped from the table (before the columns
// change, so that no index of theirs is rebuilt); gives each column the table's
// collation (0.10.0's dedup_key) and type (0.11.0's workflows.decide, from a function's
// oid to its signature as the update script writes it); adds the indexes (those not backing a constraint) and
// the CHECK, UNIQUE and EXCLUDE constraints the shard lacks; and drops the indexes (not
// backing a constraint) an update dropped. An update script changes the logical table
// on each node (Citus does not propagate the script's statements, see pg/citus/citus.hpp);
// Citus' worker_apply_shard_ddl_command names each object on the shard as Citus does
// (deliveries_run_102008). A constraint of a shard made with its table keeps its own
// name (tenants_state_check), one added later gets the shard id appended: either counts
// as present, and only the second kind can be dropped here (the name given to Citus is
// the shard's without its shard id). Foreign keys and triggers an update might add, and
// column changes other than these, are not completed here.
constexpr const char* kCompleteShards =
    "SELECT pg_catalog.count(pg_catalog.worker_apply_shard_ddl_command(s.shardid, 'baton', d.ddl)) "
    "FROM pg_catalog.pg_dist_shard s "
    "JOIN pg_catalog.pg_dist_placement p ON p.shardid OPERATOR(pg_catalog.=) s.shardid "
    "JOIN pg_catalog.pg_class t ON t.oid OPERATOR(pg_catalog.=) s.logicalrelid, LATERAL ("
    "SELECT pg_catalog.format('ALTER TABLE baton.%I DROP CONSTRAINT IF EXISTS %I', t.relname, "
    "pg_catalog.regexp_replace(c.conname::pg_catalog.text, "
    "'_' OPERATOR(pg_catalog.||) s.shardid::pg_catalog.text OPERATOR(pg_catalog.||) '$', '')) "
    "FROM pg_catalog.pg_constraint c "
    "WHERE c.conrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(pg_catalog.shard_name(s.logicalrelid, s.shardid)) "
    "AND c.contype OPERATOR(pg_catalog.=) ANY ('{c,u,x}'::pg_catalog.\"char\"[]) "
    "AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k WHERE k.conrelid OPERATOR(pg_catalog.=) s.logicalrelid "
    "AND c.conname OPERATOR(pg_catalog.=) ANY (ARRAY[k.conname, "
    "(k.conname::pg_catalog.text OPERATOR(pg_catalog.||) '_' OPERATOR(pg_catalog.||) s.shardid::pg_catalog.text)::pg_catalog.name])) "
    "UNION ALL "
    "SELECT pg_catalog.format('ALTER TABLE baton.%I ALTER COLUMN %I TYPE %s%s%s', t.relname, a.attname, "
    "pg_catalog.format_type(a.atttypid, a.atttypmod), "
    "CASE WHEN a.attcollation OPERATOR(pg_catalog.<>) 0 THEN ' COLLATE ' OPERATOR(pg_catalog.||) "
    "a.attcollation::pg_catalog.regcollation::pg_catalog.text ELSE '' END, "
    "CASE WHEN b.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.regprocedure'::pg_catalog.regtype "
    "AND a.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.text'::pg_catalog.regtype THEN pg_catalog.format("
    "' USING CASE WHEN %1$I IS NOT NULL THEN COALESCE((pg_catalog.pg_identify_object("
    "''pg_catalog.pg_proc''::pg_catalog.regclass, %1$I, 0)).identity, pg_catalog.format("
    "''pg_catalog.%%I(pg_catalog.jsonb)'', ''dropped function '' OPERATOR(pg_catalog.||) %1$I::pg_catalog.oid)) END', "
    "a.attname) ELSE '' END) "
    "FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_attribute b "
    "ON b.attrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(pg_catalog.shard_name(s.logicalrelid, s.shardid)) "
    "AND b.attname OPERATOR(pg_catalog.=) a.attname "
    "WHERE a.attrelid OPERATOR(pg_catalog.=) s.logicalrelid AND a.attnum OPERATOR(pg_catalog.>) 0 "
    "AND NOT a.attisdropped AND NOT b.attisdropped "
    "AND (a.attcollation OPERATOR(pg_catalog.<>) b.attcollation OR a.atttypid OPERATOR(pg_catalog.<>) b.atttypid) "
    "UNION ALL "
    "SELECT pg_catalog.regexp_replace(pg_catalog.pg_get_indexdef(i.indexrelid), "
    "'^CREATE (UNIQUE )?INDEX ', 'CREATE \\1INDEX IF NOT EXISTS ') "
    "FROM pg_catalog.pg_index i WHERE i.indrelid OPERATOR(pg_catalog.=) s.logicalrelid "
    "AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k WHERE k.conindid OPERATOR(pg_catalog.=) i.indexrelid) "
    "AND pg_catalog.to_regclass(pg_catalog.shard_name(i.indexrelid, s.shardid)) IS NULL "
    "UNION ALL "
    "SELECT pg_catalog.format('ALTER TABLE baton.%I ADD CONSTRAINT %I %s', t.relname, k.conname, "
    "pg_catalog.pg_get_constraintdef(k.oid)) "
    "FROM pg_catalog.pg_constraint k WHERE k.conrelid OPERATOR(pg_catalog.=) s.logicalrelid "
    "AND k.contype OPERATOR(pg_catalog.=) ANY ('{c,u,x}'::pg_catalog.\"char\"[]) "
    "AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint c "
    "WHERE c.conrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(pg_catalog.shard_name(s.logicalrelid, s.shardid)) "
    "AND c.conname OPERATOR(pg_catalog.=) ANY (ARRAY[k.conname, "
    "(k.conname::pg_catalog.text OPERATOR(pg_catalog.||) '_' OPERATOR(pg_catalog.||) s.shardid::pg_catalog.text)::pg_catalog.name])) "
    "UNION ALL "
    "SELECT pg_catalog.format('DROP INDEX IF EXISTS baton.%I', pg_catalog.regexp_replace(x.relname::pg_catalog.text, "
    "'_' OPERATOR(pg_catalog.||) s.shardid::pg_catalog.text OPERATOR(pg_catalog.||) '$', '')) "
    "FROM pg_catalog.pg_index xi JOIN pg_catalog.pg_class x ON x.oid OPERATOR(pg_catalog.=) xi.indexrelid "
    "WHERE xi.indrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(pg_catalog.shard_name(s.logicalrelid, s.shardid)) "
    "AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k WHERE k.conindid OPERATOR(pg_catalog.=) xi.indexrelid) "
    "AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_index i WHERE i.indrelid OPERATOR(pg_catalog.=) s.logicalrelid "
    "AND pg_catalog.to_regclass(pg_catalog.shard_name(i.indexrelid, s.shardid)) OPERATOR(pg_catalog.=) xi.indexrelid)"
    ") d(ddl) "
    "WHERE t.relnamespace OPERATOR(pg_catalog.=) 'baton'::pg_catalog.regnamespace "
    "AND p.groupid OPERATOR(pg_catalog.=) (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g)";

// Runs a statement on every worker (run_command_on_workers, each in a transaction of
// its own there); a failure on any worker is 55000 with the workers' answers as detail.
void run_on_workers(pg::Spi& spi, const char* command, const char* message, const char* hint) {
    std::string call = std::string("SELECT pg_catalog.bool_and(r.success), pg_catalog.string_agg(r.result, '; ') "
                                   "FROM pg_catalog.run_command_on_workers(") +
                       pg::guard([command] { return quote_literal_cstr(command); }) + ") r";
    spi.exec(call.c_str());
    if (!spi.bool_at(0, 1)) {
        const char* result = spi.cstring_at(0, 2);
        throw Error(SqlState::kObjectNotInPrerequisiteState, message, result ? result : "", hint);
    }
}

// Applies to the shards of pg_baton's tables what an update added to the tables
// (kCompleteShards), on this node (the coordinator holds the reference table's
// placement) and on every worker, each over its own placements. What every shard has
// already is left alone: idempotent.
void complete_shards(pg::Spi& spi) {
    spi.exec(kCompleteShards);
    run_on_workers(spi, kCompleteShards, "pg_baton could not complete the shards of its tables",
                   "Check that every worker has pg_baton in the coordinator's version.");
}

// Moves each worker's id sequences (deliveries' identity, entry_id_seq) to a range of
// its own: group g starts at g << 48, so ids are unique across the cluster whichever
// node assigns them (the coordinator, group 0, keeps 1 .. 2^48 for the rows inserted
// through it). Sequences already in their range are left alone: idempotent, and a
// worker added later gets its range on the next call.
void separate_id_ranges(pg::Spi& spi) {
    run_on_workers(
        spi,
        "SELECT pg_catalog.count(pg_catalog.setval(pg_catalog.format('baton.%I', q.sequencename)::pg_catalog.regclass, "
        "(g.groupid::pg_catalog.int8 OPERATOR(pg_catalog.<<) 48) OPERATOR(pg_catalog.+) 1, false)) "
        "FROM pg_catalog.pg_sequences q, pg_catalog.pg_dist_local_group g "
        "WHERE q.schemaname OPERATOR(pg_catalog.=) 'baton' "
        "AND q.sequencename OPERATOR(pg_catalog.=) ANY ('{deliveries_id_seq,entry_id_seq}'::pg_catalog.text[]) "
        "AND g.groupid OPERATOR(pg_catalog.>) 0 "
        "AND COALESCE(q.last_value, 0) OPERATOR(pg_catalog.<) (g.groupid::pg_catalog.int8 OPERATOR(pg_catalog.<<) 48)",
        "pg_baton could not give the workers their id ranges", "Check that pg_baton is installed on every worker.");
}

// What a call of distribute() did, said in its NOTICE.
struct Done {
    int tenant_tables;
    int global_tables;
    std::uint64_t functions;
    std::int64_t workers;
};

// The NOTICE that says what distribute() did: the tables and functions it handed to
// Citus now (none when they were Citus' already) and what it does on every call.
void tell(const Done& d) {
    std::string message =
        d.tenant_tables + d.global_tables + d.functions == 0
            ? "pg_baton was distributed already: no table or function handed to Citus"
            : "pg_baton distributed: " + std::to_string(d.tenant_tables) + " tenant tables, " +
                  std::to_string(d.global_tables) + " reference tables and " + std::to_string(d.functions) +
                  " functions handed to Citus";
    std::string detail = "The tenant tables are distributed by tenant over " + std::to_string(d.workers) +
                         " worker nodes, colocated with baton.tenants; every function that takes the tenant first "
                         "runs on the node that holds it. The shards have the indexes and constraints of their "
                         "tables, and each worker's ids a range of their own.";
    pg::guard([&] {
        ereport(NOTICE, (errmsg_internal("%s", message.c_str()), errdetail_internal("%s", detail.c_str()),
                         errhint("SELECT * FROM citus_tables shows the tables; docs/guide/scale-out.md says what runs where.")));
    });
}

// baton.distribute(): distributes pg_baton on a Citus coordinator with workers. The
// tenant tables by "tenant", colocated; workflows as a reference table; every function
// that takes the tenant first by that argument, colocated with the tables. Idempotent:
// what Citus has already is left as it is. After ALTER EXTENSION pg_baton UPDATE it
// finishes the update: the shards get the indexes and constraints the update added to
// their tables (complete_shards), the side tables what the deliveries hold
// (side_rows::fill, for an update that created them), then the side tables their fence
// triggers (fence_side_tables), and the new tenant functions are distributed. Each
// worker's id sequences get a range of their own (separate_id_ranges). The views granted
// to roles read through functions that run as the owner (serve_views_by_functions).
// Triggers on distributed tables need citus.enable_unsafe_triggers, which is set for
// this call only.
Datum distribute(FunctionCallInfo fcinfo, Oid caller) {
    pg::require_read_write("baton.distribute");
    pg::Spi spi;
    check_prerequisites(spi, caller);
    int level = pg::guard([] { return pg::citus::set_until_restored("citus.enable_unsafe_triggers", "on"); });
    // Citus' notices about copying local rows into shards say nothing the caller acts on.
    (void)pg::guard([] { return pg::citus::set_until_restored("client_min_messages", "warning"); });
    Done done{};
    for (const char* table : kTenantTables) done.tenant_tables += distribute_table(spi, table, true) ? 1 : 0;
    for (const char* table : kGlobalTables) done.global_tables += distribute_table(spi, table, false) ? 1 : 0;
    complete_shards(spi);
    pg::guard([] { pg::side_rows::fill(); });
    fence_side_tables(spi);
    done.functions = distribute_functions(spi);
    serve_views_by_functions(spi);
    separate_id_ranges(spi);
    spi.exec("SELECT pg_catalog.count(*) FROM pg_catalog.citus_get_active_worker_nodes()");
    done.workers = spi.int64_at(0, 1);
    pg::guard([level] { pg::citus::restore(level); });
    tell(done);
    PG_RETURN_VOID();
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_distribute, baton::api::distribute)
