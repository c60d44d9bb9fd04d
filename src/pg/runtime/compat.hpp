// Every difference between the PostgreSQL versions pg_baton builds against, in one
// place: the only file with `#if PG_VERSION_NUM`. Included by pg/runtime/postgres.hpp, after the
// Postgres headers.
#pragma once

// pg_baton builds against PostgreSQL 15 and 18, where it is built and tested; the 16
// and 17 branches follow those majors' release notes and headers, unbuilt here
// (docs/guide/versions.md).

// MyProc's local transaction id moved into a struct in PostgreSQL 17.
#if PG_VERSION_NUM >= 170000
#define BATON_MY_LXID (MyProc->vxid.lxid)
#else
#define BATON_MY_LXID (MyProc->lxid)
#endif

// stringToQualifiedNameList gained a soft-error argument in PostgreSQL 16.
#if PG_VERSION_NUM >= 160000
#define BATON_QUALIFIED_NAME_LIST(s) stringToQualifiedNameList((s), nullptr)
#else
#define BATON_QUALIFIED_NAME_LIST(s) stringToQualifiedNameList(s)
#endif

// The owner check of a database: object_ownercheck() replaced pg_database_ownercheck()
// in PostgreSQL 16.
#if PG_VERSION_NUM >= 160000
#define BATON_OWNS_DATABASE(db, role) object_ownercheck(DatabaseRelationId, (db), (role))
#else
#define BATON_OWNS_DATABASE(db, role) pg_database_ownercheck((db), (role))
#endif

// This backend's slot in the PGPROC array: a field until PostgreSQL 17, computed since.
#if PG_VERSION_NUM >= 170000
#define BATON_MY_PROC_NUMBER (static_cast<int>(GetNumberFromPGProc(MyProc)))
#else
#define BATON_MY_PROC_NUMBER (MyProc->pgprocno)
#endif

// EXECUTE on a function: object_aclcheck() replaced pg_proc_aclcheck() in PostgreSQL 16.
#if PG_VERSION_NUM >= 160000
#define BATON_PROC_ACLCHECK(fn, role, mode) object_aclcheck(ProcedureRelationId, (fn), (role), (mode))
#else
#define BATON_PROC_ACLCHECK(fn, role, mode) pg_proc_aclcheck((fn), (role), (mode))
#endif

// random()'s oid symbol: PostgreSQL 17 added random(min, max), and the no-argument one
// became F_RANDOM_.
#if PG_VERSION_NUM >= 170000
#define BATON_F_RANDOM F_RANDOM_
#else
#define BATON_F_RANDOM F_RANDOM
#endif

// The ExecutorRun hook lost its execute_once argument in PostgreSQL 18.
#if PG_VERSION_NUM >= 180000
#define BATON_EXECUTOR_RUN_ARGS QueryDesc *query, ScanDirection direction, uint64 count
#define BATON_EXECUTOR_RUN_PASS query, direction, count
#else
#define BATON_EXECUTOR_RUN_ARGS QueryDesc *query, ScanDirection direction, uint64 count, bool execute_once
#define BATON_EXECUTOR_RUN_PASS query, direction, count, execute_once
#endif

namespace baton::pg::compat {

// The status of the i-th backend (1-based) of this transaction's snapshot of them,
// nullptr past the last: renamed in PostgreSQL 17.
inline LocalPgBackendStatus* backend_status(int i) {
#if PG_VERSION_NUM >= 170000
    return pgstat_get_local_beentry_by_index(i);
#else
    return pgstat_fetch_stat_local_beentry(i);
#endif
}

// A wait event set of n events, freed by FreeWaitEventSet(): PostgreSQL 17 ties it to a
// resource owner (none here) where 15 and 16 take a memory context.
inline WaitEventSet* wait_event_set(int n) {
#if PG_VERSION_NUM >= 170000
    return CreateWaitEventSet(nullptr, n);
#else
    return CreateWaitEventSet(CurrentMemoryContext, n);
#endif
}

// Which indexes an updated version needs entries in: none (a heap-only tuple), all, or
// only the summarizing ones (BRIN), a heap-only tuple whose summarizing indexes cover a
// written column (PostgreSQL 16 and later; 15 has no such update).
enum class IndexUpdate { kNone, kAll, kSummarizing };

// table_tuple_update(), telling which index entries the version written needs.
inline TM_Result tuple_update(Relation rel, ItemPointer tid, TupleTableSlot* slot, CommandId cid, Snapshot snapshot,
                              bool wait, TM_FailureData* tmfd, IndexUpdate* indexes) {
    LockTupleMode lockmode;
#if PG_VERSION_NUM >= 160000
    TU_UpdateIndexes update_indexes = TU_None;
    TM_Result r = table_tuple_update(rel, tid, slot, cid, snapshot, InvalidSnapshot, wait, tmfd, &lockmode,
                                     &update_indexes);
    *indexes = update_indexes == TU_All           ? IndexUpdate::kAll
               : update_indexes == TU_Summarizing ? IndexUpdate::kSummarizing
                                                  : IndexUpdate::kNone;
#else
    bool all = false;
    TM_Result r = table_tuple_update(rel, tid, slot, cid, snapshot, InvalidSnapshot, wait, tmfd, &lockmode, &all);
    *indexes = all ? IndexUpdate::kAll : IndexUpdate::kNone;
#endif
    return r;
}

// Whether an index is summarizing (its entries summarize ranges of the heap, as BRIN's).
inline bool summarizing(Relation index) {
#if PG_VERSION_NUM >= 160000
    return index->rd_indam->amsummarizing;
#else
    (void)index;
    return false;
#endif
}

// ExecInsertIndexTuples() for an update or a new row (not a speculative insert), its
// unique indexes checked as a plain INSERT or UPDATE checks them (a duplicate raises
// 23505), its exclusion constraints checked; the recheck list it returns (a deferrable
// constraint's, which a table the direct path writes has not) freed; only_summarizing: a heap-only tuple's entries in the
// summarizing indexes alone (PostgreSQL 16 added the argument).
inline void insert_index_tuples(ResultRelInfo* rri, TupleTableSlot* slot, EState* estate, bool update,
                                bool only_summarizing = false) {
#if PG_VERSION_NUM >= 160000
    list_free(ExecInsertIndexTuples(rri, slot, estate, update, false, nullptr, NIL, only_summarizing));
#else
    (void)only_summarizing;
    list_free(ExecInsertIndexTuples(rri, slot, estate, update, false, nullptr, NIL));
#endif
}

// Ends each index access method's insert state kept in its IndexInfo between inserts
// (PostgreSQL 17 added aminsertcleanup: BRIN keeps its revmap there, its metapage and
// revmap page pinned); ExecCloseIndices() does the same, but only rightly for indexes
// whose inserts ran under the resource owner that closes them.
inline void end_index_inserts(ResultRelInfo* rri) {
#if PG_VERSION_NUM >= 170000
    for (int i = 0; i < rri->ri_NumIndices; i++)
        if (rri->ri_IndexRelationDescs[i] != nullptr)
            index_insert_cleanup(rri->ri_IndexRelationDescs[i], rri->ri_IndexRelationInfo[i]);
#else
    (void)rri;
#endif
}

// Forgets that state after the subtransaction that made it was rolled back: its
// resource owner released the buffers already, and ending the state then would release
// them again ("buffer pin ... is not owned by resource owner").
inline void forget_index_inserts(ResultRelInfo* rri) {
#if PG_VERSION_NUM >= 170000
    for (int i = 0; i < rri->ri_NumIndices; i++)
        if (rri->ri_IndexRelationDescs[i] != nullptr && rri->ri_IndexRelationDescs[i]->rd_indam->aminsertcleanup != nullptr)
            rri->ri_IndexRelationInfo[i]->ii_AmCache = nullptr;
#else
    (void)rri;
#endif
}

// ExecInsertIndexTuples() for a new row, its unique indexes checked without raising
// (UNIQUE_CHECK_PARTIAL, as ON CONFLICT's speculative insertion checks them): true when
// one of them may hold the key in another entry as well (of a row live or in progress).
inline bool insert_new_index_tuples(ResultRelInfo* rri, TupleTableSlot* slot, EState* estate) {
    bool conflict = false;
#if PG_VERSION_NUM >= 160000
    List* recheck = ExecInsertIndexTuples(rri, slot, estate, false, true, &conflict, NIL, false);
#else
    List* recheck = ExecInsertIndexTuples(rri, slot, estate, false, true, &conflict, NIL);
#endif
    bool maybe_taken = recheck != NIL;
    list_free(recheck);
    return maybe_taken;
}

// Whether the table has generated columns, which the executor computes on a write and
// the direct path does not: stored ones, and (PostgreSQL 18) virtual ones, whose NOT NULL
// and CHECK constraints the executor checks by expanding their expressions.
inline bool has_generated_columns(Relation rel) {
    const TupleConstr* constr = rel->rd_att->constr;
    if (constr == nullptr) return false;
#if PG_VERSION_NUM >= 180000
    return constr->has_generated_stored || constr->has_generated_virtual;
#else
    return constr->has_generated_stored;
#endif
}

// An index scan begun without instrumentation (PostgreSQL 18 added the argument).
inline IndexScanDesc index_scan(Relation heap, Relation index, Snapshot snapshot, int nkeys) {
#if PG_VERSION_NUM >= 180000
    return index_beginscan(heap, index, snapshot, nullptr, nkeys, 0);
#else
    return index_beginscan(heap, index, snapshot, nkeys, 0);
#endif
}

// The relation's file number (rd_locator from 16 on, rd_node before).
inline Oid relation_file(Relation rel) {
#if PG_VERSION_NUM >= 160000
    return rel->rd_locator.relNumber;
#else
    return rel->rd_node.relNode;
#endif
}

// The table's primary key, a deferrable one left out (PostgreSQL 18 made that a choice).
inline Oid primary_key(Relation rel) {
#if PG_VERSION_NUM >= 180000
    return RelationGetPrimaryKeyIndex(rel, false);
#else
    return RelationGetPrimaryKeyIndex(rel);
#endif
}

// Every setting, and how many there are (PostgreSQL 16 returns the count with them).
inline config_generic** settings(int* count) {
#if PG_VERSION_NUM >= 160000
    return get_guc_variables(count);
#else
    *count = GetNumConfigOptions();
    return get_guc_variables();
#endif
}

// The status of the backend at index i (1-based) of this transaction's snapshot of the
// backend status array (renamed in PostgreSQL 17).
inline LocalPgBackendStatus* local_backend(int i) {
#if PG_VERSION_NUM >= 170000
    return pgstat_get_local_beentry_by_index(i);
#else
    return pgstat_fetch_stat_local_beentry(i);
#endif
}

// The sequence of a table's identity column (PostgreSQL 17 takes the relation).
inline Oid identity_sequence(Oid table, AttrNumber column) {
#if PG_VERSION_NUM >= 170000
    Relation rel = relation_open(table, AccessShareLock);
    Oid seq = getIdentitySequence(rel, column, false);
    relation_close(rel, AccessShareLock);
    return seq;
#else
    return getIdentitySequence(table, column, false);
#endif
}

// A walker of expression and query trees: PostgreSQL 16 declared the walker's type with
// its arguments (tree_walker_callback); 15 declares it without any, so the walker passes
// through the generic function pointer type there.
using TreeWalker = bool (*)(Node*, void*);

inline bool expression_walk(Node* node, TreeWalker walker, void* context) {
#if PG_VERSION_NUM >= 160000
    return expression_tree_walker(node, walker, context);
#else
    return expression_tree_walker(node, reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(walker)), context);
#endif
}

inline bool query_walk(Query* query, TreeWalker walker, void* context, int flags) {
#if PG_VERSION_NUM >= 160000
    return query_tree_walker(query, walker, context, flags);
#else
    return query_tree_walker(query, reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(walker)), context, flags);
#endif
}

// The dead rows of a table's statistics entry: PostgreSQL 16 renamed the field.
inline PgStat_Counter dead_tuples(const PgStat_StatTabEntry* e) {
#if PG_VERSION_NUM >= 160000
    return e->dead_tuples;
#else
    return e->n_dead_tuples;
#endif
}

// The most dead rows autovacuum lets a table gather whatever its size (-1: no such cap),
// from the table's autovacuum_vacuum_max_threshold or the server's (`av`: the table's
// options, or nullptr): PostgreSQL 18 added the cap.
inline double vacuum_max_threshold(const AutoVacOpts* av) {
#if PG_VERSION_NUM >= 180000
    return av != nullptr && av->vacuum_max_threshold >= -1 ? av->vacuum_max_threshold : autovacuum_vac_max_thresh;
#else
    (void)av;
    return -1;
#endif
}

}  // namespace baton::pg::compat
