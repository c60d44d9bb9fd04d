// pg_baton's hooks in front of Citus' (see hooks.hpp).
#include "pg/citus/citus.hpp"
#include "pg/citus/citus_nested.hpp"
#include "pg/citus/hooks.hpp"
#include "pg/citus/local_group.hpp"
#include "pg/runtime/hooks.hpp"

namespace baton::pg::citus {

namespace {

planner_hook_type g_previous_planner = nullptr;
// How many plannings of this backend are under way (the planner hook's depth).
int g_planning = 0;

// The call of expr when it calls one of pg_baton's functions whose first argument is a
// uuid (the tenant, by which Citus delegates it), through implicit casts, which Citus
// strips too; nullptr otherwise. A user's function keeps its argument as written.
FuncExpr* tenant_call(Node* expr) {
    if (expr == nullptr || !IsA(expr, FuncExpr)) return nullptr;
    FuncExpr* call = reinterpret_cast<FuncExpr*>(expr);
    if (call->args == NIL || exprType(static_cast<Node*>(linitial(call->args))) != UUIDOID) return nullptr;
    Oid nsp = get_namespace_oid("baton", true);
    return OidIsValid(nsp) && get_func_namespace(call->funcid) == nsp ? call : nullptr;
}

// Whether expr is a call of pg_baton's whose first argument is the null uuid constant.
bool null_first_argument(Node* expr) {
    FuncExpr* call = tenant_call(expr);
    if (call == nullptr) return false;
    Node* first = strip_implicit_coercions(static_cast<Node*>(linitial(call->args)));
    return IsA(first, Const) && reinterpret_cast<Const*>(first)->constisnull;
}

// Whether one of pg_baton's settings has a value of this session's own (SET,
// set_config, a function's SET clause, the client's connection options). Citus passes
// none of them to the worker it delegates a call to, which would apply its own value;
// ALTER ROLE and ALTER DATABASE values Citus sets on every node, and ALTER SYSTEM is
// each node's own.
// Its settings are found once: _PG_init defines every one of them, and reserves the
// prefix, before any statement is planned (PostgreSQL 16 and later sort the whole list
// of settings on each look at it).
constexpr int kMaxOwnSettings = 64;
config_generic* g_own_settings[kMaxOwnSettings];
int g_own_count = -1;
bool session_settings() {
    if (g_own_count < 0) {
        int count = 0;
        config_generic** settings = compat::settings(&count);
        g_own_count = 0;
        for (int i = 0; i < count && g_own_count < kMaxOwnSettings; i++)
            if (strncmp(settings[i]->name, "baton.", 6) == 0) g_own_settings[g_own_count++] = settings[i];
    }
    for (int i = 0; i < g_own_count; i++)
        if (g_own_settings[i]->source >= PGC_S_CLIENT) return true;
    return false;
}

// Replaces the first argument a of call by `CASE WHEN random() < 0 THEN NULL::uuid
// ELSE a END`, which is a too but volatile: the planner cannot fold it back into a
// constant (Citus plans the query before it tries to delegate), and Citus delegates no
// call with a volatile argument, so the call runs here.
void hide_first_argument(FuncExpr* call) {
    Expr* random = reinterpret_cast<Expr*>(
        makeFuncExpr(BATON_F_RANDOM, FLOAT8OID, NIL, InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL));
    Expr* zero = reinterpret_cast<Expr*>(makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8),
                                                   Float8GetDatum(0.0), false, FLOAT8PASSBYVAL));
    Expr* test = make_opclause(Float8LessOperator, BOOLOID, false, random, zero, InvalidOid, InvalidOid);
    CaseWhen* when = makeNode(CaseWhen);
    when->expr = test;
    when->result = reinterpret_cast<Expr*>(makeNullConst(UUIDOID, -1, InvalidOid));
    when->location = -1;
    CaseExpr* hidden = makeNode(CaseExpr);
    hidden->casetype = UUIDOID;
    hidden->casecollid = InvalidOid;
    hidden->arg = nullptr;
    hidden->args = list_make1(when);
    hidden->defresult = static_cast<Expr*>(linitial(call->args));
    hidden->location = -1;
    linitial(call->args) = hidden;
}

// Whether a SELECT is, as written, of the shapes Citus' function delegation is made for:
// no WITH, no set operation, no subquery anywhere, no WHERE, and nothing in FROM but one
// function call (`SELECT f(...)`, `SELECT ... FROM f(...)`). Citus looks for its shapes
// in the query its planner has already rewritten (subqueries pulled up, CTEs inlined,
// empty FROM items removed), and a statement that comes to look like one only there,
// `SELECT count(*) FROM (SELECT * FROM f(...)) s`, is delegated from that rewritten
// tree, which Citus cannot deparse (SIGSEGV in AcquireRewriteLocks).
bool delegable_as_written(const Query* parse) {
    if (parse->cteList != NIL || parse->setOperations != nullptr || parse->hasSubLinks) return false;
    const FromExpr* jointree = parse->jointree;
    if (jointree == nullptr || jointree->quals != nullptr) return false;
    if (jointree->fromlist == NIL) return true;
    if (list_length(jointree->fromlist) != 1 || !IsA(linitial(jointree->fromlist), RangeTblRef)) return false;
    const RangeTblEntry* rte =
        list_nth_node(RangeTblEntry, parse->rtable, linitial_node(RangeTblRef, jointree->fromlist)->rtindex - 1);
    return rte->rtekind == RTE_FUNCTION && list_length(rte->functions) == 1;
}

// Adds each expression of a SELECT's target list and each function call of its FROM to
// *calls when it is a call of pg_baton's with the tenant first: the calls Citus may
// delegate in a statement delegable as written.
void top_level_calls(Query* parse, List** calls) {
    ListCell* cell;
    foreach (cell, parse->targetList) {
        if (FuncExpr* call = tenant_call(reinterpret_cast<Node*>(lfirst_node(TargetEntry, cell)->expr)))
            *calls = lappend(*calls, call);
    }
    foreach (cell, parse->rtable) {
        RangeTblEntry* rte = lfirst_node(RangeTblEntry, cell);
        if (rte->rtekind != RTE_FUNCTION || list_length(rte->functions) != 1) continue;
        if (FuncExpr* call = tenant_call(linitial_node(RangeTblFunction, rte->functions)->funcexpr))
            *calls = lappend(*calls, call);
    }
}

// A tree walker: adds every call of pg_baton's with the tenant first, at every level of
// the statement (subqueries, CTEs, sublinks, set operations, LATERAL), to the List**
// context.
bool all_calls(Node* node, void* context) {
    if (node == nullptr) return false;
    if (IsA(node, Query)) return compat::query_walk(reinterpret_cast<Query*>(node), all_calls, context, 0);
    if (FuncExpr* call = tenant_call(node)) {
        List** calls = static_cast<List**>(context);
        *calls = lappend(*calls, call);
    }
    return compat::expression_walk(node, all_calls, context);
}

// Refuses (0A000) a write whose query reads or writes a table of schema baton that has
// rules: Citus crashes (SIGSEGV) planning a write to a distributed table
// with a rule, a pg_baton table or any other, so on a distributed install such a
// statement stops here, before Citus plans it. A rule's own actions are queries of their own that name
// the table too, so they are refused as well. Postgres calls only.
void refuse_rules(Query* parse) {
    Oid nsp = InvalidOid;
    ListCell* cell;
    foreach (cell, parse->rtable) {
        RangeTblEntry* rte = lfirst_node(RangeTblEntry, cell);
        if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_RELATION) continue;
        if (nsp == InvalidOid) nsp = get_namespace_oid("baton", true);
        if (get_rel_namespace(rte->relid) != nsp) continue;
        // The relation cache's rules, not pg_class.relhasrules, which stays set after
        // the last rule is dropped (until a VACUUM).
        Relation rel = RelationIdGetRelation(rte->relid);
        if (rel == nullptr) continue;
        bool has_rules = rel->rd_rules != nullptr && rel->rd_rules->numLocks > 0;
        RelationClose(rel);
        if (!has_rules) continue;
        const char* name = get_rel_name(rte->relid);
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("table \"baton.%s\" has rules, which a distributed install does not support", name),
                        errdetail("Citus crashes planning a write to a distributed table that has rules."),
                        errhint("Drop the rules of baton.%s (DROP RULE ... ON baton.%s).", name, name)));
    }
}

// The planner after pg_baton's (Citus'), counted in g_planning. Postgres calls only.
PlannedStmt* next_planner(Query* parse, const char* query_string, int cursor_options, ParamListInfo params) {
    PlannedStmt* result = nullptr;
    g_planning++;
    PG_TRY();
    {
        if (g_previous_planner != nullptr)
            result = g_previous_planner(parse, query_string, cursor_options, params);
        else
            result = standard_planner(parse, query_string, cursor_options, params);
    }
    PG_FINALLY();
    { g_planning--; }
    PG_END_TRY();
    return result;
}

// The planner hook: on a distributed install, a SELECT that calls pg_baton's functions
// with the tenant first gets those first arguments hidden from Citus' delegation (see
// install_hooks()): every such call at every level when the SELECT is not delegable as
// written, and the calls of its target list and FROM when one of them is a NULL literal
// or when the session has a pg_baton setting of its own; a write that touches a pg_baton table
// with rules is refused there (refuse_rules()); every statement then goes to the next
// planner, and one planned at the top of the backend is told to citus_nested (a call
// Citus delegated here). The cheap tests of the query's shape come before the catalog's.
// Postgres calls only.
PlannedStmt* plan(Query* parse, const char* query_string, int cursor_options, ParamListInfo params) {
    if (parse->commandType != CMD_SELECT && parse->commandType != CMD_UTILITY && parse->rtable != NIL &&
        distributed_unguarded())
        refuse_rules(parse);
    if (parse->commandType == CMD_SELECT) {
        List* calls = NIL;
        bool hide = !delegable_as_written(parse);
        if (hide) {
            // The whole statement is walked on a distributed install only.
            if (distributed_unguarded()) (void)all_calls(reinterpret_cast<Node*>(parse), &calls);
        } else {
            top_level_calls(parse, &calls);
            ListCell* cell;
            foreach (cell, calls) {
                if (null_first_argument(static_cast<Node*>(lfirst(cell)))) hide = true;
            }
            if (calls != NIL && !hide) hide = session_settings();
        }
        if (calls != NIL && hide && distributed_unguarded()) {
            ListCell* cell;
            foreach (cell, calls) hide_first_argument(static_cast<FuncExpr*>(lfirst(cell)));
        }
        list_free(calls);
    }
    // A statement planned at the top of the backend may be a call Citus delegated here
    // (citus_nested: Citus allows its nested statements itself).
    bool top = g_planning == 0;
    bool delegated = top && citus_nested::delegated_call(parse);
    PlannedStmt* result = next_planner(parse, query_string, cursor_options, params);
    if (top) citus_nested::delegated_call_planned(delegated);
    return result;
}

ProcessUtility_hook_type g_previous_utility = nullptr;

// Whether the statement being run is one of pg_baton's own install or update script
// (the extension being created or updated is pg_baton; the script's earlier statements
// and the extension's row are visible to it).
bool in_baton_script() {
    return creating_extension && OidIsValid(CurrentExtensionObject) &&
           CurrentExtensionObject == get_extension_oid("pg_baton", true);
}

// A CALL, told to citus_nested before it runs and after it ends, on every way out.
// Postgres calls only.
void call_utility(PlannedStmt* pstmt, const char* query, bool read_only_tree, ProcessUtilityContext context,
                  ParamListInfo params, QueryEnvironment* env, DestReceiver* dest, QueryCompletion* qc) {
    citus_nested::call_begins(castNode(CallStmt, pstmt->utilityStmt));
    PG_TRY();
    {
        if (g_previous_utility != nullptr)
            g_previous_utility(pstmt, query, read_only_tree, context, params, env, dest, qc);
        else
            standard_ProcessUtility(pstmt, query, read_only_tree, context, params, env, dest, qc);
    }
    PG_FINALLY();
    { citus_nested::call_ends(); }
    PG_END_TRY();
}

// The utility hook (see install_hooks()): a statement of pg_baton's script runs with
// citus.enable_ddl_propagation off when Citus is loaded; a CALL is told to citus_nested
// (a procedure call Citus delegated here); every other statement goes to the next hook
// untouched. An error leaves the setting to the transaction's (or subtransaction's)
// abort, which undoes the nesting level. Postgres calls only.
void utility(PlannedStmt* pstmt, const char* query, bool read_only_tree, ProcessUtilityContext context,
             ParamListInfo params, QueryEnvironment* env, DestReceiver* dest, QueryCompletion* qc) {
    int level = 0;
    if (in_baton_script() && GetConfigOption("citus.enable_ddl_propagation", true, false) != nullptr)
        level = set_until_restored("citus.enable_ddl_propagation", "off");
    // A CALL may be a procedure call Citus delegated here (citus_nested).
    if (IsA(pstmt->utilityStmt, CallStmt))
        call_utility(pstmt, query, read_only_tree, context, params, env, dest, qc);
    else if (g_previous_utility != nullptr)
        g_previous_utility(pstmt, query, read_only_tree, context, params, env, dest, qc);
    else
        standard_ProcessUtility(pstmt, query, read_only_tree, context, params, env, dest, qc);
    if (level != 0) restore(level);
}

}  // namespace

void install_runtime_hooks() {
    hooks::Hooks h;
    h.enter = citus_nested::enter;
    h.leave = citus_nested::leave;
    h.before_statement = citus_nested::refuse_statement;
    h.before_write = citus_nested::refuse_write;
    h.custom_plans = distributed;
    hooks::install(h);
    local_group::install();
}

void install_hooks() {
    g_previous_planner = planner_hook;
    planner_hook = plan;
    g_previous_utility = ProcessUtility_hook;
    ProcessUtility_hook = utility;
    citus_nested::install_hook();
}


}  // namespace baton::pg::citus
