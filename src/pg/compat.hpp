// Every difference between the PostgreSQL versions pg_baton builds against, in one
// place: the only file with `#if PG_VERSION_NUM`. Included by pg/postgres.hpp, after the
// Postgres headers.
#pragma once

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

namespace baton::pg::compat {

// table_tuple_update() that reports whether the version written needs index entries:
// PostgreSQL 16 tells which (TU_UpdateIndexes; a summarizing-only update is left to the
// next full one), 15 a bool.
inline TM_Result tuple_update(Relation rel, ItemPointer tid, TupleTableSlot* slot, CommandId cid, Snapshot snapshot,
                              bool wait, TM_FailureData* tmfd, bool* needs_indexes) {
    LockTupleMode lockmode;
#if PG_VERSION_NUM >= 160000
    TU_UpdateIndexes update_indexes = TU_None;
    TM_Result r = table_tuple_update(rel, tid, slot, cid, snapshot, InvalidSnapshot, wait, tmfd, &lockmode,
                                     &update_indexes);
    *needs_indexes = update_indexes != TU_None;
#else
    TM_Result r = table_tuple_update(rel, tid, slot, cid, snapshot, InvalidSnapshot, wait, tmfd, &lockmode,
                                     needs_indexes);
#endif
    return r;
}

// ExecInsertIndexTuples() for an update or a new row (not a speculative insert), its
// unique indexes checked as a plain INSERT or UPDATE checks them (a duplicate raises
// 23505), its recheck list freed: PostgreSQL 16 added the onlySummarizing argument.
inline void insert_index_tuples(ResultRelInfo* rri, TupleTableSlot* slot, EState* estate, bool update) {
#if PG_VERSION_NUM >= 160000
    list_free(ExecInsertIndexTuples(rri, slot, estate, update, false, nullptr, NIL, false));
#else
    list_free(ExecInsertIndexTuples(rri, slot, estate, update, false, nullptr, NIL));
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

}  // namespace baton::pg::compat
