// A pg_baton function called inside a Citus shard query (see citus_nested.hpp).
#include <string>

#include "core/error.hpp"
#include "pg/citus/citus.hpp"
#include "pg/citus/citus_nested.hpp"
#include "pg/citus/local_group.hpp"

namespace baton::pg::citus_nested {

namespace {

// The statements this backend is running, outermost first (the executor hook's stack);
// deeper ones than kMaxDepth are counted, not kept.
constexpr int kMaxDepth = 64;
PlannedStmt* g_running[kMaxDepth];
int g_depth = 0;

// The function (its name, e.g. "delivery") running inside a shard query, or nullptr;
// and whether its tenant's shard is one the query reads on this node.
const char* g_function = nullptr;
bool g_tenant_shard_here = false;

// A statement Citus takes for a call delegated here, planned in transaction
// g_delegated_lxid, until its run ends; how deep this backend is in CALLs, and whether
// the outermost is a procedure call delegated here (see in_delegated_call()).
bool g_delegated_function = false;
LocalTransactionId g_delegated_lxid = InvalidLocalTransactionId;
int g_call_depth = 0;
bool g_delegated_procedure = false;

ExecutorRun_hook_type g_previous_run = nullptr;

// The executor hook: keeps queryDesc's statement on the stack while it runs; an error
// unwinds the stack with it. Postgres calls only.
void run(BATON_EXECUTOR_RUN_ARGS) {
    int depth = g_depth;
    if (depth < kMaxDepth) g_running[depth] = query->plannedstmt;
    if (depth == 0) local_group::top_statement_runs();
    g_depth = depth + 1;
    PG_TRY();
    {
        if (g_previous_run != nullptr)
            g_previous_run(BATON_EXECUTOR_RUN_PASS);
        else
            standard_ExecutorRun(BATON_EXECUTOR_RUN_PASS);
    }
    PG_FINALLY();
    {
        g_depth = depth;
        // The statement Citus took for a delegated call has run (Citus forgets it when
        // its executor level returns to 0).
        if (depth == 0) g_delegated_function = false;
    }
    PG_END_TRY();
}

// This node's group (pg_dist_local_group), -1 when unknown. Postgres calls only.
int32 local_group() {
    int32 group = -1;
    citus::scan_catalog("pg_dist_local_group", nullptr, 0, InvalidOid, 0, [&](HeapTuple tuple, TupleDesc desc) {
        bool isnull = false;
        Datum value = heap_getattr(tuple, 1, desc, &isnull);
        if (!isnull) group = DatumGetInt32(value);
        return true;
    });
    return group;
}

// Whether the shard shardid has a placement on this node's group (pg_dist_placement).
// Postgres calls only.
bool placed_here(int64 shardid) {
    int32 group = local_group();
    bool here = false;
    citus::scan_catalog("pg_dist_placement", "pg_dist_placement_shardid_index", 2, F_INT8EQ, Int64GetDatum(shardid),
                        [&](HeapTuple tuple, TupleDesc desc) {
                            bool isnull = false;
                            Datum value = heap_getattr(tuple, 5, desc, &isnull);
                            here = !isnull && DatumGetInt32(value) == group;
                            return here;
                        });
    return here;
}

// The colocation group of the distributed table relid (pg_dist_partition), 0 when none.
// Postgres calls only.
uint32 colocation_of(Oid relid) {
    uint32 colocation = 0;
    citus::scan_catalog("pg_dist_partition", "pg_dist_partition_logical_relid_index", 1, F_OIDEQ,
                        ObjectIdGetDatum(relid), [&](HeapTuple tuple, TupleDesc desc) {
                            bool isnull = false;
                            Datum value = heap_getattr(tuple, 4, desc, &isnull);
                            if (!isnull) colocation = DatumGetUInt32(value);
                            return true;
                        });
    return colocation;
}

// The shard id of relname when it names a shard (`deliveries_102008`: a name, '_',
// digits), 0 otherwise.
int64 shard_suffix(const char* relname) {
    const char* underscore = strrchr(relname, '_');
    if (underscore == nullptr || underscore[1] == '\0') return 0;
    int64 id = 0;
    for (const char* c = underscore + 1; *c != '\0'; c++) {
        if (*c < '0' || *c > '9' || id > (PG_INT64_MAX - 9) / 10) return 0;
        id = id * 10 + (*c - '0');
    }
    return id;
}

// Citus' delegated calls. On the node a call is delegated to, Citus itself allows the
// call's nested distributed execution: a statement `SELECT f(...)` or `SELECT ... FROM
// f(...)` of a distributed function, planned at the top of a backend that another node
// opened for Citus' work, is a delegated call until its run ends (a worker's statement
// `SELECT count(*) FROM baton.finish_batch(t, ARRAY(SELECT id FROM
// baton.deliveries_102008 ...), ...)` too), and a CALL of a distributed procedure there
// a delegated procedure call until it ends. Citus keeps that in two flags of its library
// (InTopLevelDelegatedFunctionCall, InDelegatedProcedureCall), which it does not export
// where the server builds extensions with hidden symbols (PostgreSQL 16 and later);
// pg_baton recognises the same statements by Citus' own rules
// (TryToDelegateFunctionCall, CallDistributedProcedureRemotely), from its planner and
// utility hooks (hooks.hpp), on every Citus version, into g_delegated_function and
// g_delegated_procedure (above: the executor hook clears the first).

// Whether another node opened this backend for Citus' work (Citus' IsCitusInternalBackend:
// application_name "citus_internal gpid=N", N not 0).
bool citus_internal_backend() {
    static const char kPrefix[] = "citus_internal gpid=";
    if (application_name == nullptr || strncmp(application_name, kPrefix, sizeof kPrefix - 1) != 0) return false;
    return strtoull(application_name + sizeof kPrefix - 1, nullptr, 10) != 0;
}

// Whether fn is a function or procedure Citus distributes (a row of pg_dist_object);
// *forced: created with force_delegation. Postgres calls only.
bool distributed_function(Oid fn, bool* forced) {
    bool found = false;
    *forced = false;
    citus::scan_catalog("pg_dist_object", nullptr, 2, F_OIDEQ, ObjectIdGetDatum(fn),
                        [&](HeapTuple tuple, TupleDesc desc) {
                            bool isnull = false;
                            if (DatumGetObjectId(heap_getattr(tuple, 1, desc, &isnull)) != ProcedureRelationId)
                                return false;
                            if (desc->natts >= 9) {
                                Datum force = heap_getattr(tuple, 9, desc, &isnull);
                                *forced = !isnull && DatumGetBool(force);
                            }
                            return found = true;
                        });
    return found;
}

// Whether relid is a Citus table (a row of pg_dist_partition). Postgres calls only.
bool citus_table(Oid relid) {
    bool found = false;
    citus::scan_catalog("pg_dist_partition", "pg_dist_partition_logical_relid_index", 1, F_OIDEQ,
                        ObjectIdGetDatum(relid), [&](HeapTuple, TupleDesc) { return found = true; });
    return found;
}

// A tree walker: true at the first Citus table that node, or a query inside it, reads.
bool reads_citus_table(Node* node, void* context) {
    if (node == nullptr) return false;
    if (IsA(node, RangeTblEntry)) {
        RangeTblEntry* rte = reinterpret_cast<RangeTblEntry*>(node);
        return rte->rtekind == RTE_RELATION && citus_table(rte->relid);
    }
    if (IsA(node, Query))
        return compat::query_walk(reinterpret_cast<Query*>(node), reads_citus_table, context,
                                  QTW_EXAMINE_RTES_BEFORE);
    return compat::expression_walk(node, reads_citus_table, context);
}

// The function of a statement of the shapes Citus delegates (TryToDelegateFunctionCall):
// a SELECT without WHERE of one function call, its whole target list (`SELECT f(...)`,
// nothing in FROM) or its FROM (`SELECT ... FROM f(...)`), not both; nullptr otherwise.
FuncExpr* delegable_call(Query* parse) {
    if (parse->commandType != CMD_SELECT || parse->jointree == nullptr || parse->jointree->quals != nullptr)
        return nullptr;
    FuncExpr* from = nullptr;
    List* fromlist = parse->jointree->fromlist;
    if (fromlist != NIL) {
        if (list_length(fromlist) != 1 || !IsA(linitial(fromlist), RangeTblRef)) return nullptr;
        RangeTblEntry* rte =
            list_nth_node(RangeTblEntry, parse->rtable, linitial_node(RangeTblRef, fromlist)->rtindex - 1);
        if (rte->rtekind == RTE_FUNCTION) {
            if (list_length(rte->functions) == 1) {
                Node* expr = linitial_node(RangeTblFunction, rte->functions)->funcexpr;
                if (IsA(expr, FuncExpr)) from = reinterpret_cast<FuncExpr*>(expr);
            }
        } else if (rte->rtekind != RTE_RESULT) {
            return nullptr;
        }
    }
    if (list_length(parse->targetList) == 1) {
        Expr* expr = linitial_node(TargetEntry, parse->targetList)->expr;
        if (IsA(expr, FuncExpr)) return from == nullptr ? reinterpret_cast<FuncExpr*>(expr) : nullptr;
    }
    return from;
}

// Whether Citus runs the statement as a call it delegated here (see above). Postgres
// calls only.
bool in_delegated_call() {
    return (g_delegated_function && g_delegated_lxid == BATON_MY_LXID) || g_delegated_procedure;
}

// Where a call runs: not inside a shard query; inside one, with its tenant in a shard
// the query reads that is placed on this node; inside one otherwise.
enum class Where { kNotInShardQuery, kTenantShardHere, kElsewhere };

// Where the call of fcinfo runs. Looks for Citus shards among the relations of the
// statements running (a shard query sent by the coordinator, or one Citus runs by local
// execution), and for one that holds the call's tenant: its first argument, a uuid,
// hashed as Citus hashes it, within the shard's hash range, the shard's table colocated
// with baton.tenants (so the shard stands for the tenant's whole shard group: every
// pg_baton table, and a user's table colocated with them), and a placement of it on
// this node. A statement Citus runs as a delegated call is left to Citus. Postgres
// calls only.
Where where_called(FunctionCallInfo fcinfo) {
    if (in_delegated_call()) return Where::kNotInShardQuery;
    Oid tenants = InvalidOid;
    Oid nsp = get_namespace_oid("baton", true);
    if (OidIsValid(nsp)) tenants = get_relname_relid("tenants", nsp);
    uint32 tenant_group = OidIsValid(tenants) ? colocation_of(tenants) : 0;
    bool has_tenant = tenant_group != 0 && fcinfo->nargs > 0 && !fcinfo->args[0].isnull &&
                      get_fn_expr_argtype(fcinfo->flinfo, 0) == UUIDOID;
    int32 hash = has_tenant ? DatumGetInt32(DirectFunctionCall1(uuid_hash, fcinfo->args[0].value)) : 0;
    const char* local_execution = GetConfigOption("citus.enable_local_execution", true, false);
    bool local = local_execution != nullptr && strcmp(local_execution, "on") == 0;
    bool in_shard_query = false;
    int depth = g_depth < kMaxDepth ? g_depth : kMaxDepth;
    for (int i = 0; i < depth; i++) {
        ListCell* cell;
        foreach (cell, g_running[i]->rtable) {
            RangeTblEntry* rte = lfirst_node(RangeTblEntry, cell);
            if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_RELATION) continue;
            char* relname = get_rel_name(rte->relid);
            int64 shardid = relname != nullptr ? shard_suffix(relname) : 0;
            if (shardid == 0) continue;
            bool covers = false;
            citus::scan_catalog(
                "pg_dist_shard", "pg_dist_shard_shardid_index", 2, F_INT8EQ, Int64GetDatum(shardid),
                [&](HeapTuple tuple, TupleDesc desc) {
                    bool isnull = false;
                    Oid logical = DatumGetObjectId(heap_getattr(tuple, 1, desc, &isnull));
                    // The shard's name is its table's, '_', its id, in its table's schema.
                    char* name = get_rel_name(logical);
                    size_t length = name != nullptr ? strlen(name) : 0;
                    if (name == nullptr || strncmp(name, relname, length) != 0 || relname[length] != '_' ||
                        get_rel_namespace(logical) != get_rel_namespace(rte->relid))
                        return true;
                    in_shard_query = true;
                    bool min_null = false;
                    bool max_null = false;
                    Datum min = heap_getattr(tuple, 5, desc, &min_null);
                    Datum max = heap_getattr(tuple, 6, desc, &max_null);
                    if (has_tenant && !min_null && !max_null && colocation_of(logical) == tenant_group) {
                        int32 low = pg_strtoint32(TextDatumGetCString(min));
                        int32 high = pg_strtoint32(TextDatumGetCString(max));
                        covers = low <= hash && hash <= high;
                    }
                    return true;
                });
            if (covers && local && placed_here(shardid)) return Where::kTenantShardHere;
        }
    }
    return in_shard_query ? Where::kElsewhere : Where::kNotInShardQuery;
}

}  // namespace

// Only when Citus was loaded first (its settings exist), as its preload order requires:
// without Citus no statement is a shard query, and no statement pays for the hook.
void install_hook() {
    if (GetConfigOption("citus.enable_local_execution", true, false) == nullptr) return;
    g_previous_run = ExecutorRun_hook;
    ExecutorRun_hook = run;
}

bool delegated_call(Query* parse) {
    if (g_depth != 0 || !citus_internal_backend()) return false;
    FuncExpr* call = delegable_call(parse);
    bool forced = false;
    if (call == nullptr || !distributed_function(call->funcid, &forced)) return false;
    // A call delegated with force_delegation inside a transaction block has no
    // nested execution of its own.
    if (forced && IsTransactionBlock()) return false;
    // A statement that reads a Citus table is planned as a distributed query instead.
    return !reads_citus_table(reinterpret_cast<Node*>(parse), nullptr);
}

void delegated_call_planned(bool delegated) {
    g_delegated_function = delegated;
    g_delegated_lxid = BATON_MY_LXID;
}

void call_begins(const CallStmt* call) {
    g_call_depth++;
    bool forced = false;
    if (!g_delegated_procedure && call->funcexpr != nullptr && citus_internal_backend() &&
        distributed_function(call->funcexpr->funcid, &forced))
        g_delegated_procedure = true;
}

void call_ends() {
    if (--g_call_depth == 0) g_delegated_procedure = false;
}

namespace {

// What enter() replaced, for leave().
struct Call {
    int level;               // the setting's GUC nesting level, 0 when none was set
    const char* previous;    // the function inside a shard query before this one
    bool previous_here;      // and whether its tenant's shard was the query's here
};

}  // namespace

void* enter(FunctionCallInfo fcinfo) {
    if (g_depth == 0 || !citus::distributed()) return nullptr;
    Where where = guard([&] { return where_called(fcinfo); });
    if (where == Where::kNotInShardQuery) return nullptr;
    const char* name = guard([&] { return get_func_name(fcinfo->flinfo->fn_oid); });
    Call* call = guard([] { return static_cast<Call*>(palloc0(sizeof(Call))); });
    call->previous = g_function;
    call->previous_here = g_tenant_shard_here;
    if (where == Where::kTenantShardHere)
        call->level =
            guard([] { return citus::set_until_restored("citus.allow_nested_distributed_execution", "on"); });
    g_function = name;
    g_tenant_shard_here = where == Where::kTenantShardHere;
    return call;
}

void leave(void* entered, bool unwinding) {
    if (entered == nullptr) return;
    const Call* call = static_cast<const Call*>(entered);
    g_function = call->previous;
    g_tenant_shard_here = call->previous_here;
    if (call->level != 0 && !unwinding) guard([call] { citus::restore(call->level); });
}

void refuse_statement() {
    if (g_function == nullptr || g_tenant_shard_here) return;
    std::string name = std::string("baton.") + g_function + "()";
    throw Error(SqlState::kFeatureNotSupported, name + " cannot run inside a query on a shard of another tenant",
                "Citus runs the query on the nodes of the shards it reads, and the call's tenant is not in the "
                "shard the query reads there (or the call has no tenant): its statements would run outside the "
                "query's transaction.",
                "Call " + name + " alone or with constants, without a distributed table in the same query, "
                "or restrict the query to the call's tenant (WHERE tenant = ...).");
}

void refuse_write(const char* function) {
    if (g_function == nullptr) return;
    std::string name = std::string(function) + "()";
    throw Error(SqlState::kFeatureNotSupported, name + " cannot run inside a query on a distributed table",
                "Citus runs the query on the shards' nodes as a read: what " + name +
                    " wrote there would commit outside the statement's distributed transaction (without "
                    "two-phase commit, and outside BEGIN ... COMMIT each shard's part on its own).",
                "Call " + name + " alone or with constants, one call per statement (for example from a "
                "PL/pgSQL loop over the rows the query selects).");
}

}  // namespace baton::pg::citus_nested
