// The reaper's vacuum of the side tables of deliveries (see side_vacuum.hpp).
#include "pg/workers/side_vacuum.hpp"

#include "pg/citus/citus.hpp"
#include "pg/runtime/owner.hpp"
#include "pg/workers/logged.hpp"

namespace baton::pg::side_vacuum {

namespace {

// A table, its vacuum as pg_stat_activity shows it, and the horizon its last vacuum
// here ran at (invalid before the first).
struct Table {
    const char* name;
    const char* statement;
    TransactionId horizon;
};
Table g_tables[] = {{"ready", "VACUUM (SKIP_LOCKED, TRUNCATE false) baton.ready", InvalidTransactionId},
                    {"leases", "VACUUM (SKIP_LOCKED, TRUNCATE false) baton.leases", InvalidTransactionId}};

// The largest table the reaper vacuums, in pages: one it vacuums in a moment, so that
// its round, which also returns expired leases and fires schedules, stays short. A
// larger one (the ready rows of a backlog of millions, the dead rows of a transaction
// held open for long) is left to autovacuum.
constexpr BlockNumber kMaxPages = 16384;

// The context VACUUM allocates its own under (PortalContext, which a background worker
// does not have otherwise), made once and emptied after each vacuum.
MemoryContext g_portal = nullptr;

// True when autovacuum's rule says `rel` needs a vacuum now (see the header).
bool needs_vacuum(Relation rel) {
    if (!autovacuum_start_daemon || rel->rd_rel->relkind != RELKIND_RELATION) return false;
    if (RelationGetNumberOfBlocks(rel) > kMaxPages) return false;
    const AutoVacOpts* av =
        rel->rd_options != nullptr ? &reinterpret_cast<const StdRdOptions*>(rel->rd_options)->autovacuum : nullptr;
    if (av != nullptr && !av->enabled) return false;
    PgStat_StatTabEntry* stats = pgstat_fetch_stat_tabentry(RelationGetRelid(rel));
    if (stats == nullptr) return false;
    double base = av != nullptr && av->vacuum_threshold >= 0 ? av->vacuum_threshold : autovacuum_vac_thresh;
    double scale = av != nullptr && av->vacuum_scale_factor >= 0 ? av->vacuum_scale_factor : autovacuum_vac_scale;
    double rows = rel->rd_rel->reltuples > 0 ? rel->rd_rel->reltuples : 0;
    double threshold = base + scale * rows;
    double cap = compat::vacuum_max_threshold(av);
    if (cap >= 0 && threshold > cap) threshold = cap;
    return static_cast<double>(compat::dead_tuples(stats)) > threshold;
}

// `table` when it is due: its horizon now, or an invalid one. Inside a transaction.
TransactionId due(const Table& table) {
    Oid nsp = get_namespace_oid("baton", true);
    if (!OidIsValid(nsp) || XactReadOnly || !OidIsValid(owner::of_extension(true))) return InvalidTransactionId;
    Oid relid = get_relname_relid(table.name, nsp);
    if (!OidIsValid(relid) || citus::distributed_unguarded()) return InvalidTransactionId;
    Relation rel = try_relation_open(relid, AccessShareLock);
    if (rel == nullptr) return InvalidTransactionId;
    TransactionId horizon = InvalidTransactionId;
    if (needs_vacuum(rel)) {
        horizon = GetOldestNonRemovableTransactionId(rel);
        if (TransactionIdEquals(horizon, table.horizon)) horizon = InvalidTransactionId;
    }
    relation_close(rel, AccessShareLock);
    return horizon;
}

// VACUUM (SKIP_LOCKED, TRUNCATE false) baton.<name>, as the statement runs it at top
// level: ExecVacuum commits the transaction it is called in, vacuums in transactions of
// its own, and starts one more for the caller to commit. As the bootstrap superuser, as autovacuum
// runs; VACUUM runs the table's index functions as the table's owner.
void vacuum(const char* name) {
    if (g_portal == nullptr)
        g_portal = AllocSetContextCreate(TopMemoryContext, "pg_baton side vacuum", ALLOCSET_DEFAULT_SIZES);
    VacuumStmt* stmt = makeNode(VacuumStmt);
    stmt->options = list_make2(makeDefElem(pstrdup("skip_locked"), nullptr, -1),
                               makeDefElem(pstrdup("truncate"), reinterpret_cast<Node*>(makeString(pstrdup("false"))), -1));
    stmt->rels = list_make1(makeVacuumRelation(makeRangeVar(pstrdup("baton"), pstrdup(name), -1), InvalidOid, NIL));
    stmt->is_vacuumcmd = true;
    ParseState* pstate = make_parsestate(nullptr);
    MemoryContext saved = PortalContext;
    PortalContext = g_portal;
    PG_TRY();
    { ExecVacuum(pstate, stmt, true); }
    PG_FINALLY();
    {
        PortalContext = saved;
        MemoryContextReset(g_portal);
    }
    PG_END_TRY();
}

// One table: decides in a transaction, and vacuums in the same one when due.
struct Step {
    Table* table;
    bool vacuumed;
};
void step(void* arg) {
    auto* s = static_cast<Step*>(arg);
    SetCurrentStatementStartTimestamp();
    StartTransactionCommand();
    TransactionId horizon = due(*s->table);
    if (TransactionIdIsValid(horizon)) {
        pgstat_report_activity(STATE_RUNNING, s->table->statement);
        vacuum(s->table->name);
        s->table->horizon = horizon;
        s->vacuumed = true;
    }
    CommitTransactionCommand();
    pgstat_report_activity(STATE_IDLE, nullptr);
}

}  // namespace

int run() {
    int vacuumed = 0;
    for (Table& table : g_tables) {
        Step s{&table, false};
        if (workers::logged(step, &s) && s.vacuumed) vacuumed++;
    }
    return vacuumed;
}

}  // namespace baton::pg::side_vacuum
