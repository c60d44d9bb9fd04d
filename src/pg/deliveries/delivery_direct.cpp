// The direct implementation of the delivery store: baton.deliveries through heap and
// index access (see delivery_direct.hpp).
#include <cstring>
#include <optional>
#include <string_view>

#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "core/scan_floor.hpp"
#include "core/upkeep.hpp"
#include "pg/citus/citus.hpp"
#include "pg/citus/local_group.hpp"
#include "pg/deliveries/delivery_direct.hpp"
#include "pg/deliveries/side_rows.hpp"
#include "pg/deliveries/upkeep.hpp"
#include "pg/runtime/cache.hpp"
#include "pg/runtime/relations.hpp"
#include "pg/runtime/spi.hpp"
#include "pg/runtime/settings.hpp"
#include "pg/workers/launcher.hpp"

namespace baton::pg::delivery_direct {

namespace {

// The columns of baton.deliveries this file reads or writes, found by name once per
// backend (relations::attnums, kept until a relcache invalidation of the table).
enum Column {
    kId, kTarget, kDedupKey, kStatus, kGeneration, kAttempts, kMaxAttempts, kPriority,
    kRunAfter, kLeaseUntil, kPayload, kBinding, kResult, kRunId, kSettledAt, kTenant, kColumns
};
const char* const kColumnNames[kColumns] = {
    "id",       "target",    "dedup_key",   "status",  "generation", "attempts", "max_attempts", "priority",
    "run_after", "lease_until", "payload",  "binding", "result",     "run_id",   "settled_at", "tenant"};

const char* const kKeyColumnName[1] = {"key"};

// The columns of baton.ready a claim reads, found as those above (row_tid may be missing:
// a schema of 0.9.0's first builds).
enum ReadyColumn { kReadyId, kReadyRunAfter, kReadyRowTid, kReadyColumns };
const char* const kReadyColumnNames[kReadyColumns] = {"id", "run_after", "row_tid"};

// The columns of baton.target_bindings binding() reads, found as those above: its key
// first.
enum BindingColumn { kBindingTenant, kBindingTarget, kBindingRole, kBindingWeight, kBindingPausedAt, kBindingColumns };
const char* const kBindingColumnNames[kBindingColumns] = {"tenant", "target", "role", "weight", "paused_at"};

// True when the direct path does the trigger's work itself: pg_baton's fence and
// fence_truncate, or a check of pg_baton's own foreign key (tenant, run_id) to
// baton.runs (an insert naming a run takes the statement, can_insert(); a claim or a
// settle keeps run_id). Any other internal trigger is a constraint's that only the
// executor runs: a user's foreign key, a deferrable constraint's recheck.
// runs: baton.runs' oid, looked up before: the loop over the relation cache's list of
// foreign keys makes no catalog call, which could accept an invalidation of rel and free
// the list.
bool own_trigger(Relation rel, const Trigger* tg, Oid baton_nsp, Oid runs, const AttrNumber* col) {
    if (!tg->tgisinternal) return relations::own_trigger_name(tg->tgname) && get_func_namespace(tg->tgfoid) == baton_nsp;
    if (RI_FKey_trigger_type(tg->tgfoid) != RI_TRIGGER_FK) return false;
    ListCell* cell = nullptr;
    foreach (cell, RelationGetFKeyList(rel)) {
        const ForeignKeyCacheInfo* fk = lfirst_node(ForeignKeyCacheInfo, cell);
        if (fk->conoid != tg->tgconstraint) continue;
        return fk->confrelid == runs && fk->nkeys == 2 && fk->conkey[0] == col[kTenant] && fk->conkey[1] == col[kRunId];
    }
    return false;
}

// True when column attnum of the relation is of a domain type, whose constraints the
// executor checks on each value it assigns to it (CoerceToDomain).
bool is_domain(Relation rel, AttrNumber attnum) {
    return get_typtype(TupleDescAttr(RelationGetDescr(rel), attnum - 1)->atttypid) == TYPTYPE_DOMAIN;
}

// The columns of kColumnNames that are of a domain type, a bit (1 << Column) each.
std::uint32_t domain_columns(Relation rel, const AttrNumber* col) {
    std::uint32_t domains = 0;
    for (int c = 0; c < kColumns; c++)
        if (is_domain(rel, col[c])) domains |= 1u << c;
    return domains;
}

// True when the direct path can do every duty of the executor on the table
// (docs/internals/architecture.md, "What the direct path does with each executor duty").
bool direct_shape(Relation rel, const AttrNumber* col) {
    if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relrowsecurity || rel->rd_rules != nullptr ||
        compat::has_generated_columns(rel))
        return false;
    if (rel->trigdesc == nullptr) return true;
    Oid nsp = RelationGetNamespace(rel);  // schema baton's
    Oid runs = relations::opened("runs");
    // A copy, as the executor takes one (InitResultRelInfo): a catalog look-up below may
    // accept an invalidation of rel, whose rebuild frees the relation's trigger list.
    TriggerDesc* triggers = CopyTriggerDesc(rel->trigdesc);
    bool own = true;
    for (int i = 0; own && i < triggers->numtriggers; i++) own = own_trigger(rel, &triggers->triggers[i], nsp, runs, col);
    FreeTriggerDesc(triggers);
    return own;
}

// What direct_shape() and the privilege check said, per backend and table (on a Citus
// worker, per shard: pg/citus/local_group.hpp), until a relcache invalidation of it or a
// change of roles.
struct Decided {
    bool direct;      // direct_shape()
    std::uint32_t domains;  // domain_columns()
    Oid user;         // InvalidOid: look the privileges up again
    AclMode granted;  // the user's privileges on the table among kPrivileges
};
bool decided_depends(const Oid& table, const Decided&, Oid relid) { return table == relid; }
cache::Map<Oid, Decided, cache::Blobs, decided_depends> g_decided{"pg_baton direct tables", 1024,
                                                                  cache::Forgets::kDependents};
constexpr AclMode kPrivileges = ACL_SELECT | ACL_INSERT | ACL_UPDATE;

// Tells each index whether the direct writes leave its key unchanged, as the executor's
// index_unchanged_by_update() would (it needs a range table entry this path has not):
// unchanged when it has no expression and none of its columns is one a claim or a
// settle writes. An unchanged key asks btree for bottom-up deletion of the row's older
// versions before a page splits; a changed one does not.
void hint_unchanged_keys(ResultRelInfo* rri, const AttrNumber* col) {
    const Column written[] = {kStatus, kGeneration, kAttempts, kLeaseUntil, kSettledAt, kResult};
    for (int i = 0; i < rri->ri_NumIndices; i++) {
        IndexInfo* info = rri->ri_IndexRelationInfo[i];
        bool unchanged = info->ii_Expressions == NIL;
        for (int k = 0; k < info->ii_NumIndexAttrs && unchanged; k++)
            for (Column c : written)
                if (info->ii_IndexAttrNumbers[k] == col[c]) unchanged = false;
        info->ii_CheckedUnchanged = true;
        info->ii_IndexUnchanged = unchanged;
    }
}

// True when write_indexes() covers every index of the table: none is an exclusion
// constraint, which ExecInsertIndexTuples() checks after the insert. (A deferrable
// constraint's table is left to the statements: own_trigger().)
bool plain_indexes(const ResultRelInfo* rri) {
    for (int i = 0; i < rri->ri_NumIndices; i++)
        if (rri->ri_IndexRelationDescs[i] != nullptr && rri->ri_IndexRelationInfo[i]->ii_ExclusionOps != nullptr)
            return false;
    return true;
}

// 40001 for a delivery changed after a REPEATABLE READ or SERIALIZABLE snapshot, in the
// words an UPDATE would use.
[[noreturn]] void serialization_failure(std::int64_t id) {
    ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                    errmsg("could not serialize access due to concurrent update"),
                    errdetail("Delivery %lld changed after this transaction's snapshot was taken.",
                              static_cast<long long>(id)),
                    errhint("Retry the transaction.")));
    pg_unreachable();
}

}  // namespace

// The table as open() leaves it for one call (see delivery_direct.hpp).
struct Table {
    Relation rel;
    EState* estate;
    ResultRelInfo* rri;
    Oid pkey_oid;          // baton.deliveries' primary key, opened by its first probe (fetch_by_key())
    Relation pkey;
    Relation ready;        // baton.ready and its primary key: what a claim scans (open_ready())
    Relation ready_pkey;
    TupleTableSlot* ready_found;  // the ready row read
    AttrNumber ready_col[kReadyColumns];
    IndexScanDesc by_key;  // the primary key probe of settle() and of a claim, begun on first use
    IndexFetchTableData* by_tid;  // a claim's fetch of a ready row's row_tid, begun on first use
    upkeep::Writers side;  // baton.ready and baton.leases, for a claim's upkeep
    AttrNumber col[kColumns];
    AttrNumber key_col;       // baton.deliveries.key, 0 in a schema before keys
    TupleTableSlot* found;    // the version read (a buffer slot)
    TupleTableSlot* written;  // the version written (virtual)
    Snapshot snapshot;
    CommandId cid;
    bool has_lease_until;    // a claim's lease_until, computed once per call
    bool indexes_open;       // rri's indexes, opened by the first write that needs them (open_indexes())
    bool own_index_loop;     // write_indexes() may skip the unique checks (plain_indexes())
    TimestampTz lease_until;
    ExprState** defaults;    // insert(): per column, the default of one an enqueue leaves out
    std::uint32_t domains;   // the columns of a domain type (domain_columns())
    std::uint32_t assigned;  // the columns the version in `written` assigns (build_claim(), build_settle())
    void* domain_state[kColumns];  // domain_check()'s state per column, for the call
    AttrNumber* insert_domains;    // insert(): the columns of a domain type it assigns, 0-terminated
    void** insert_domain_state;    // ...and domain_check()'s state for each
    TupleTableSlot** many;   // insert(): the rows of one heap_multi_insert (nmany), made by can_insert()
    int nmany;
    BlockNumber nblocks;     // the table's length, read once per call (0: not yet)
};

// A claim's index scan over one range, and the rows it has reserved.
struct Cursor {
    Table* table;
    const pg_uuid_t* tenant;
    IndexScanDesc scan;    // of baton.ready's primary key
    ScanKeyData keys[5];
    int nkeys;
    int windows_left;      // a level's scan: the windows of ids still to widen to (next_window())
    ItemPointerData ready_tid;  // the ready row of the last candidate
    ItemPointerData* reserved;  // the claimed versions reserve() wrote to the heap
    compat::IndexUpdate* indexed;  // ...and the index entries each needs from complete()
    int nreserved;
    int in_written;             // the reservation whose version `written` still holds, or -1
};

namespace {

// A column of the version read.
Datum found_value(Table* t, Column c, bool* isnull) { return slot_getattr(t->found, t->col[c], isnull); }

// The columns a version is read from for its upkeep (pg/deliveries/upkeep.hpp).
upkeep::Columns side_columns(const Table* t) {
    const AttrNumber* c = t->col;
    return {c[kTenant],   c[kId],         c[kTarget],     c[kStatus], c[kPriority],
            c[kRunAfter], c[kGeneration], c[kLeaseUntil], t->key_col};
}

// The status of the version read, as the core knows it; nullopt for NULL or a spelling
// the core does not know.
std::optional<delivery::Status> found_status(Table* t) {
    bool isnull = false;
    Datum d = found_value(t, kStatus, &isnull);
    if (isnull) return std::nullopt;
    text* s = DatumGetTextPP(d);
    return delivery::parse_status(std::string_view(VARDATA_ANY(s), VARSIZE_ANY_EXHDR(s)));
}

// The status, generation and attempts of the version read (status already known).
delivery::Row found_row(Table* t, delivery::Status status) {
    bool n1 = false, n2 = false, n3 = false;
    return {status, DatumGetInt64(found_value(t, kGeneration, &n1)), DatumGetInt32(found_value(t, kAttempts, &n2)),
            DatumGetInt32(found_value(t, kMaxAttempts, &n3))};
}

// Starts the version to write as a copy of the version read.
void begin_write(Table* t) {
    int natts = RelationGetDescr(t->rel)->natts;
    slot_getallattrs(t->found);
    ExecClearTuple(t->written);
    t->assigned = 0;
    std::memcpy(t->written->tts_values, t->found->tts_values, natts * sizeof(Datum));
    std::memcpy(t->written->tts_isnull, t->found->tts_isnull, natts * sizeof(bool));
}

// Sets column `attnum` of the row in `slot`.
void put(TupleTableSlot* slot, AttrNumber attnum, Datum value, bool isnull = false) {
    slot->tts_values[attnum - 1] = value;
    slot->tts_isnull[attnum - 1] = isnull;
}

// Sets a column of the version to write.
void put(Table* t, Column c, Datum value, bool isnull = false) {
    put(t->written, t->col[c], value, isnull);
    t->assigned |= 1u << c;
}

// Checks a value assigned to column attnum against its domain's constraints, as the
// executor's CoerceToDomain does; state: domain_check()'s for the column, kept for the call.
void check_domain(Table* t, AttrNumber attnum, Datum value, bool isnull, void** state) {
    domain_check(value, isnull, TupleDescAttr(RelationGetDescr(t->rel), attnum - 1)->atttypid, state,
                 t->estate->es_query_cxt);
}

// Opens the table's indexes on the first write that adds entries to them (a heap-only
// update adds none). The locks come later than an UPDATE takes them, but the table's
// RowExclusiveLock keeps out CREATE INDEX, REINDEX and DROP INDEX, and their concurrent
// forms wait for this transaction.
void open_indexes(Table* t) {
    if (t->indexes_open) return;
    ExecOpenIndices(t->rri, false);
    hint_unchanged_keys(t->rri, t->col);
    t->own_index_loop = plain_indexes(t->rri);
    t->indexes_open = true;
}

// Writes the version built in `written` over the version read, at tid, in the heap
// only: its index entries are write_indexes()'s (on TM_Ok, *indexed tells which it
// needs: a HOT update none, or its summarizing indexes' alone). wait: wait for a
// transaction holding the row, or return TM_BeingModified at once.
TM_Result write_heap(Table* t, ItemPointer tid, bool wait, TM_FailureData* tmfd, compat::IndexUpdate* indexed) {
    ExecStoreVirtualTuple(t->written);
    // The domains of the columns the write assigns, and the table's NOT NULL and CHECK
    // constraints, as an UPDATE checks them: a user may have added some.
    if (std::uint32_t check = t->domains & t->assigned; check != 0)
        for (int c = 0; c < kColumns; c++)
            if ((check & (1u << c)) != 0)
                check_domain(t, t->col[c], t->written->tts_values[t->col[c] - 1],
                             t->written->tts_isnull[t->col[c] - 1], &t->domain_state[c]);
    if (t->rel->rd_att->constr != nullptr) ExecConstraints(t->rri, t->written, t->estate);
    return compat::tuple_update(t->rel, tid, t->written, t->cid, t->snapshot, wait, tmfd, indexed);
}

// The index entries of the version written in `slot` (its tts_tid): what
// ExecInsertIndexTuples() does for an update, except that a valid unique index with no
// predicate whose key the writes leave unchanged (hint_unchanged_keys(): the primary key,
// the dedup key) is not checked for uniqueness: the row's own older version holds that
// key, so no other row can (an inserter of the key finds the older version and waits for
// this transaction). A table with an exclusion constraint (plain_indexes()) takes
// ExecInsertIndexTuples() itself. A heap-only tuple (kSummarizing) gets entries in the
// summarizing indexes alone, as the executor gives it.
void write_indexes(Table* t, TupleTableSlot* slot, compat::IndexUpdate which) {
    if (which == compat::IndexUpdate::kNone) return;
    bool only_summarizing = which == compat::IndexUpdate::kSummarizing;
    open_indexes(t);
    if (!t->own_index_loop) {
        compat::insert_index_tuples(t->rri, slot, t->estate, true, only_summarizing);
        ResetPerTupleExprContext(t->estate);
        return;
    }
    ResultRelInfo* rri = t->rri;
    ExprContext* econtext = GetPerTupleExprContext(t->estate);
    econtext->ecxt_scantuple = slot;
    Datum values[INDEX_MAX_KEYS];
    bool isnull[INDEX_MAX_KEYS];
    for (int i = 0; i < rri->ri_NumIndices; i++) {
        Relation index = rri->ri_IndexRelationDescs[i];
        IndexInfo* info = rri->ri_IndexRelationInfo[i];
        if (index == nullptr || !info->ii_ReadyForInserts) continue;
        if (only_summarizing && !compat::summarizing(index)) continue;
        if (info->ii_Predicate != NIL) {
            if (info->ii_PredicateState == nullptr)
                info->ii_PredicateState = ExecPrepareQual(info->ii_Predicate, t->estate);
            if (!ExecQual(info->ii_PredicateState, econtext)) continue;
        }
        FormIndexDatum(info, slot, t->estate, values, isnull);
        // Checked: a partial index, which may take an entry the older version did not
        // have (its predicate on a written column), and one still being built.
        bool same_key_as_before =
            info->ii_IndexUnchanged && info->ii_Predicate == NIL && index->rd_index->indisvalid;
        IndexUniqueCheck check =
            index->rd_index->indisunique && !same_key_as_before ? UNIQUE_CHECK_YES : UNIQUE_CHECK_NO;
        index_insert(index, values, isnull, &slot->tts_tid, t->rel, check, info->ii_IndexUnchanged, info);
    }
    ResetPerTupleExprContext(t->estate);
}

// write_heap(), then write_indexes(): the whole update.
TM_Result write_over(Table* t, ItemPointer tid, bool wait, TM_FailureData* tmfd) {
    compat::IndexUpdate indexed = compat::IndexUpdate::kNone;
    TM_Result r = write_heap(t, tid, wait, tmfd, &indexed);
    if (r == TM_Ok) write_indexes(t, t->written, indexed);
    return r;
}

// Locks the latest version of the row at tid into `found` (READ COMMITTED only): a
// finish checks the delivery as it is now, as an UPDATE's EvalPlanQual does.
TM_Result lock_latest(Table* t, ItemPointer tid, LockWaitPolicy policy) {
    TM_FailureData tmfd;
    return table_tuple_lock(t->rel, tid, t->snapshot, t->found, t->cid, LockTupleNoKeyExclusive, policy,
                            TUPLE_LOCK_FLAG_FIND_LAST_VERSION, &tmfd);
}

// The claim's changes to the version read (pending): the row delivery::claimed() says.
void build_claim(Table* t, TimestampTz lease_until) {
    begin_write(t);
    delivery::Row row = delivery::claimed(found_row(t, delivery::Status::kPending));
    put(t, kStatus, CStringGetTextDatum(delivery::status_name(row.status)));
    put(t, kGeneration, Int64GetDatum(row.generation));
    put(t, kAttempts, Int32GetDatum(row.attempts));
    put(t, kLeaseUntil, TimestampTzGetDatum(lease_until));
}

// The infomask and raw xmax of the version in `slot`, read under its buffer's share
// lock when it lies in a shared buffer, as Postgres reads a tuple header that other
// backends may be changing.
struct Xmax {
    std::uint16_t infomask;
    TransactionId xid;
};
Xmax read_xmax(TupleTableSlot* slot) {
    bool should_free = false;
    HeapTuple tuple = ExecFetchSlotHeapTuple(slot, false, &should_free);
    Buffer buffer = should_free || !TTS_IS_BUFFERTUPLE(slot)
                        ? InvalidBuffer
                        : reinterpret_cast<BufferHeapTupleTableSlot*>(slot)->buffer;
    if (BufferIsValid(buffer)) LockBuffer(buffer, BUFFER_LOCK_SHARE);
    Xmax x{tuple->t_data->t_infomask, HeapTupleHeaderGetRawXmax(tuple->t_data)};
    if (BufferIsValid(buffer)) LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
    if (should_free) heap_freetuple(tuple);
    return x;
}

// True when the version read had no xmax when it was read: no transaction has locked,
// updated or deleted it. A hint for choosing the cheaper path (the xmax may be set
// right after); both paths are correct either way.
bool untouched(Table* t) {
    Xmax x = read_xmax(t->found);
    return (x.infomask & HEAP_XMAX_INVALID) != 0 || !TransactionIdIsValid(x.xid);
}

// True when the ready row just read was deleted by another transaction that was running
// when the call's snapshot was taken and runs still (a claim or a cancel taking its
// delivery): a claim skips it as SKIP LOCKED skips a row another holds, without reading
// the delivery. A deleter that has ended falls through to the delivery's own checks.
bool deleted_by_running(Table* t) {
    Xmax x = read_xmax(t->ready_found);
    if ((x.infomask & (HEAP_XMAX_INVALID | HEAP_XMAX_IS_MULTI)) != 0 || HEAP_XMAX_IS_LOCKED_ONLY(x.infomask) ||
        !TransactionIdIsValid(x.xid) || TransactionIdIsCurrentTransactionId(x.xid))
        return false;
    return XidInMVCCSnapshot(x.xid, t->snapshot) && TransactionIdIsInProgress(x.xid);
}

// True when the core says the version read is claimable at `now`: pending and due.
bool claimable(Table* t, TimestampTz now) {
    std::optional<delivery::Status> status = found_status(t);
    bool isnull = false;
    Datum run_after = found_value(t, kRunAfter, &isnull);
    return status && !isnull && delivery::claimable(*status, DatumGetTimestampTz(run_after), now);
}

// True when tid lies within the table: a table holds no block beyond its length, and a
// VACUUM cannot shorten it while the call holds its lock (its length is read once).
bool within(Table* t, ItemPointer tid) {
    if (t->nblocks == 0) t->nblocks = RelationGetNumberOfBlocks(t->rel);
    return ItemPointerIsValid(tid) && ItemPointerGetBlockNumber(tid) < t->nblocks;
}

// True when the version in `found` is the delivery (tenant, id)'s.
bool found_is(Table* t, const pg_uuid_t* tenant, std::int64_t id) {
    bool n1 = false, n2 = false;
    Datum found_id = found_value(t, kId, &n1);
    Datum found_tenant = found_value(t, kTenant, &n2);
    return !n1 && !n2 && DatumGetInt64(found_id) == id &&
           std::memcmp(DatumGetUUIDP(found_tenant), tenant, sizeof *tenant) == 0;
}

// Where this backend's direct claims wrote the claimed version of their deliveries, by
// id: a worker mostly finishes what it claimed, and reading that version by its tid
// spares the finish a descent of the primary key. The settle that reads an entry drops
// it; a missing entry only sends the finish to the primary key, and at kClaimedAt
// entries (claims never finished here) the next new one empties the table. An entry
// names the relation and its file (a rewrite gives the table a new one), and its tid is
// used only when it lies within the table and holds a version the call's snapshot sees
// that is the delivery's own (tenant and id compared): no invalidation touches it.
struct ClaimedAt {
    Oid relid;
    Oid relfile;
    pg_uuid_t tenant;
    ItemPointerData tid;
};
constexpr long kClaimedAt = 4096;  // above the largest batch a worker finishes at once
cache::Map<std::int64_t, ClaimedAt> g_claimed_at{"pg_baton claimed tids", kClaimedAt, cache::Forgets::kNothing};

// Remembers where the claim wrote the claimed version of (tenant, id).
void remember_claimed(Table* t, const pg_uuid_t* tenant, std::int64_t id, ItemPointer tid) {
    ClaimedAt at{RelationGetRelid(t->rel), compat::relation_file(t->rel), *tenant, *tid};
    guard([id, &at] { *g_claimed_at.enter(id) = at; });
}

// Reads into `found` the version of (tenant, id) this backend's claim wrote, when the
// call's snapshot sees it; else false. Not under SERIALIZABLE, whose index probe also
// takes the predicate lock on the key's page.
bool fetch_claimed(Table* t, const pg_uuid_t* tenant, std::int64_t id) {
    const ClaimedAt* kept = g_claimed_at.find(id);
    if (kept == nullptr) return false;
    ClaimedAt at = *kept;
    g_claimed_at.remove(id);
    if (at.relid != RelationGetRelid(t->rel) || at.relfile != compat::relation_file(t->rel) ||
        std::memcmp(&at.tenant, tenant, sizeof *tenant) != 0 || IsolationIsSerializable())
        return false;
    return within(t, &at.tid) && table_tuple_fetch_row_version(t->rel, &at.tid, t->snapshot, t->found) &&
           found_is(t, tenant, id);
}

// Reads into `found` the version of (tenant, id) the call's snapshot sees in the chain
// of versions that starts at row_tid (a ready row's: where the delivery's row was
// written; later versions updated in place follow it, as an index entry's do); false
// when there is none there, or it is another row's (then the probe of the primary key
// reads the row). Not under SERIALIZABLE, as fetch_claimed().
bool fetch_at(Table* t, const pg_uuid_t* tenant, std::int64_t id, ItemPointer row_tid) {
    if (IsolationIsSerializable() || !within(t, row_tid)) return false;
    if (t->by_tid == nullptr) t->by_tid = table_index_fetch_begin(t->rel);
    bool call_again = false, all_dead = false;
    ItemPointerData tid = *row_tid;
    return table_index_fetch_tuple(t->by_tid, &tid, t->snapshot, t->found, &call_again, &all_dead) &&
           found_is(t, tenant, id);
}

// Reads the row (tenant, id) visible to the call's snapshot into `found`, by the primary
// key; false when there is none. The key is opened on the first probe (fetch_at() and
// fetch_claimed() most often spare it; its lock comes after the table's, as the other
// indexes' in open_indexes()).
bool fetch_by_key(Table* t, const pg_uuid_t* tenant, std::int64_t id) {
    ScanKeyData keys[2];
    ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_UUID_EQ, UUIDPGetDatum(const_cast<pg_uuid_t*>(tenant)));
    ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(id));
    if (t->pkey == nullptr) t->pkey = index_open(t->pkey_oid, RowExclusiveLock);
    if (t->by_key == nullptr) t->by_key = compat::index_scan(t->rel, t->pkey, t->snapshot, 2);
    index_rescan(t->by_key, keys, 2, nullptr, 0);
    return index_getnext_slot(t->by_key, ForwardScanDirection, t->found);
}

// A by-reference column of a version, copied into the current context.
Datum copied(Table* t, TupleTableSlot* slot, Column c, bool* isnull) {
    Form_pg_attribute att = TupleDescAttr(RelationGetDescr(t->rel), t->col[c] - 1);
    Datum d = slot_getattr(slot, t->col[c], isnull);
    return *isnull ? static_cast<Datum>(0) : datumCopy(d, att->attbyval, att->attlen);
}

// Opens baton.ready and its primary key for a claim or an insert, locked in that order
// (relations.hpp), as an INSERT would; leaves them closed (t->ready nullptr) while
// baton.ready or baton.leases has triggers other than pg_baton's own (pg_repack's while
// it copies the table), which the direct writes to them would pass by.
void open_ready(Table* t) {
    if (side_rows::has_triggers(side_rows::Table::kLeases)) return;
    Oid ready_pkey = InvalidOid;
    Relation ready = relations::open_with_index("ready", "ready_pkey", RowExclusiveLock, &ready_pkey);
    if (!relations::only_own_triggers(ready)) {
        table_close(ready, NoLock);
        return;
    }
    const AttrNumber* ready_cols = relations::attnums(ready, kReadyColumnNames, kReadyColumns);
    for (int c = 0; c < kReadyColumns; c++) {
        t->ready_col[c] = ready_cols[c];
        if (t->ready_col[c] == 0 && c != kReadyRowTid)
            elog(ERROR, "pg_baton cannot find column baton.ready.%s", kReadyColumnNames[c]);
    }
    t->ready = ready;
    t->side.ready_open = ready;  // the claim's upkeep removes its ready rows through it
    t->ready_pkey = index_open(ready_pkey, RowExclusiveLock);
    t->ready_found = table_slot_create(ready, nullptr);
}

}  // namespace

// Opens the table unless a path the direct writes would skip is in use (see the header).
Table* open(Use use) {
    // On a distributed install the rows live in the shards, which statements reach through
    // Citus' planner, unless the call is served from its tenant's shards on this node
    // (pg/citus/local_group.hpp): then the tables opened here are those shards.
    if (!settings::direct_access || (citus::distributed() && !local_group::active())) return nullptr;
    return guard([use]() -> Table* {
        // The side tables' triggers matter only to the calls that write them (open_ready()).
        // The table, and the oid of its primary key (fetch_by_key() opens it).
        Oid pkey = InvalidOid;
        Relation rel = relations::open_with_index("deliveries", "deliveries_pkey", RowExclusiveLock, &pkey);
        const AttrNumber* cols = relations::attnums(rel, kColumnNames, kColumns);
        for (int c = 0; c < kColumns; c++)
            if (cols[c] == 0) elog(ERROR, "pg_baton cannot find column baton.deliveries.%s", kColumnNames[c]);
        // The table's shape once per relcache change, the privileges once per user and
        // change of roles. Without a privilege the statement's executor decides (it also
        // knows the columns' privileges): 42501, or not.
        Oid relid = RelationGetRelid(rel);
        Decided* decided = g_decided.find(relid);
        if (decided == nullptr) {
            std::uint64_t generation = g_decided.generation();
            Decided found{direct_shape(rel, cols), domain_columns(rel, cols), InvalidOid, 0};
            decided = g_decided.enter(relid, generation);
            *decided = found;
        }
        if (decided->user != GetUserId()) {
            decided->granted = pg_class_aclmask(relid, GetUserId(), kPrivileges, ACLMASK_ALL);
            decided->user = GetUserId();
        }
        AclMode needed = use == Use::kInsert ? ACL_INSERT : ACL_SELECT | ACL_UPDATE;
        if (!decided->direct || (decided->granted & needed) != needed) {
            table_close(rel, NoLock);
            return nullptr;
        }
        // The executor's refusal of an update that a publication could not replicate
        // (the relcache keeps the publications' answer).
        if (use != Use::kInsert) CheckCmdReplicaIdentity(rel, CMD_UPDATE);
        Table* t = static_cast<Table*>(palloc0(sizeof(Table)));
        t->rel = rel;
        TupleDesc desc = RelationGetDescr(rel);
        for (int c = 0; c < kColumns; c++) t->col[c] = cols[c];
        t->key_col = relations::attnums(rel, kKeyColumnName, 1)[0];
        t->domains = decided->domains;
        t->estate = CreateExecutorState();
        t->rri = makeNode(ResultRelInfo);
        // No range table entry: hint_unchanged_keys() tells which keys the writes keep.
        InitResultRelInfo(t->rri, rel, 0, nullptr, 0);
        t->pkey_oid = pkey;
        t->side = upkeep::writers(rel);
        // Before the snapshot: a lock waited for behind a rewrite of baton.ready (pg_repack's
        // swap) must not leave the call reading the new files under an older snapshot.
        if (use != Use::kSettle) open_ready(t);
        t->found = table_slot_create(rel, nullptr);
        t->written = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
        // As an SPI statement does: this transaction's earlier writes become visible,
        // and the call reads under a snapshot of its own (a new one under READ COMMITTED).
        CommandCounterIncrement();
        PushActiveSnapshot(GetTransactionSnapshot());
        UpdateActiveSnapshotCommandId();
        t->snapshot = GetActiveSnapshot();
        t->cid = GetCurrentCommandId(true);
        t->estate->es_snapshot = t->snapshot;
        t->estate->es_output_cid = t->cid;
        return t;
    });
}

// True when open() opened baton.ready for a claim (see the header).
bool can_claim(Table* t) { return t->ready != nullptr; }

// Ends the scans and the executor state, pops the snapshot, and makes the writes visible.
void close(Table* t) {
    guard([t] {
        if (t->by_key != nullptr) index_endscan(t->by_key);
        if (t->by_tid != nullptr) table_index_fetch_end(t->by_tid);
        upkeep::close(&t->side);
        if (t->ready != nullptr) {
            ExecDropSingleTupleTableSlot(t->ready_found);
            index_close(t->ready_pkey, NoLock);
            table_close(t->ready, NoLock);
        }
        ExecDropSingleTupleTableSlot(t->found);
        ExecDropSingleTupleTableSlot(t->written);
        side_rows::drop_slots(t->many, t->nmany);
        if (t->indexes_open) ExecCloseIndices(t->rri);
        if (t->pkey != nullptr) index_close(t->pkey, NoLock);
        FreeExecutorState(t->estate);
        PopActiveSnapshot();
        table_close(t->rel, NoLock);
        CommandCounterIncrement();
        pfree(t);
    });
}

namespace {

// A level's scan reads the ids after the hint a window at a time: btree reads a leaf
// page's matching entries all at once, to the end of the page, checking every key of
// each, though a claim most often takes the first. An upper bound on the id stops it at
// the end of the window: 8 ids and two per row asked for. Ids are shared by every tenant
// and target, so a target's rows may lie far apart: a window read to its end before the
// claim has its rows gives way to the next, 32 times as wide, and that one to the rest
// of the level.
constexpr std::int64_t kFirstWindow = 8;
constexpr std::int64_t kWidening = 32;

// The last id of the window of `width` ids that starts at `first` (the largest id when
// the sum would overflow).
std::int64_t window_last(std::int64_t first, std::int64_t width) {
    return first > PG_INT64_MAX - width ? PG_INT64_MAX : first + width - 1;
}

// Moves a level's scan to the next window of ids, the rest of the level after the
// second: false when the scan had no bound left.
bool next_window(Cursor* c) {
    if (c->windows_left == 0) return false;
    std::int64_t last = DatumGetInt64(c->keys[4].sk_argument);
    if (last == PG_INT64_MAX) return false;
    std::int64_t width = (last - DatumGetInt64(c->keys[3].sk_argument) + 1) * kWidening;
    c->keys[3].sk_argument = Int64GetDatum(last + 1);
    c->keys[4].sk_argument = Int64GetDatum(--c->windows_left == 0 ? PG_INT64_MAX : window_last(last + 1, width));
    index_rescan(c->scan, c->keys, c->nkeys, nullptr, 0);
    return true;
}

// Begins a claim's index scan over one range, for up to max_rows rows.
Cursor* begin_claim(Table* t, const pg_uuid_t* tenant, const text* target, ClaimRange range, claim_hint::Position from,
                    int max_rows) {
    return guard([t, tenant, target, range, from, max_rows] {
        Cursor* c = static_cast<Cursor*>(palloc0(sizeof(Cursor)));
        c->reserved = static_cast<ItemPointerData*>(palloc(sizeof(ItemPointerData) * (max_rows + 1)));
        c->indexed = static_cast<compat::IndexUpdate*>(palloc(sizeof(compat::IndexUpdate) * (max_rows + 1)));
        c->table = t;
        c->tenant = tenant;
        c->in_written = -1;
        // ready_pkey is (target, tenant, rank, id), rank the priority negated.
        ScanKeyInit(&c->keys[0], 1, BTEqualStrategyNumber, F_TEXTEQ, PointerGetDatum(target));
        c->keys[0].sk_collation = t->ready_pkey->rd_indcollation[0];
        ScanKeyInit(&c->keys[1], 2, BTEqualStrategyNumber, F_UUID_EQ, UUIDPGetDatum(const_cast<pg_uuid_t*>(tenant)));
        std::int64_t rank = side_rows::rank_of(static_cast<std::int32_t>(from.priority));
        c->nkeys = 2;
        if (range == ClaimRange::kLevel) {
            ScanKeyInit(&c->keys[2], 3, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(rank));
            ScanKeyInit(&c->keys[3], 4, BTGreaterEqualStrategyNumber, F_INT8GE, Int64GetDatum(from.id));
            ScanKeyInit(&c->keys[4], 4, BTLessEqualStrategyNumber, F_INT8LE,
                        Int64GetDatum(window_last(from.id, kFirstWindow + 2 * static_cast<std::int64_t>(max_rows))));
            c->nkeys = 5;
            c->windows_left = 2;
        } else if (range == ClaimRange::kBelow) {
            ScanKeyInit(&c->keys[2], 3, BTGreaterStrategyNumber, F_INT8GT, Int64GetDatum(rank));
            c->nkeys = 3;
        }
        c->scan = compat::index_scan(t->ready, t->ready_pkey, t->snapshot, c->nkeys);
        index_rescan(c->scan, c->keys, c->nkeys, nullptr, 0);
        return c;
    });
}

// Ends the scan and frees the cursor.
void end_claim(Cursor* c) {
    guard([c] {
        index_endscan(c->scan);
        pfree(c->reserved);
        pfree(c->indexed);
        pfree(c);
    });
}

// The next claimable row of the scan: the next ready row due at `now`, and its delivery,
// read into `found` and asked delivery::claimable(): false when the range has no more.
bool next_candidate(Cursor* c, TimestampTz now) {
    return guard([c, now] {
        Table* t = c->table;
        for (;;) {
            if (!index_getnext_slot(c->scan, ForwardScanDirection, t->ready_found)) {
                if (next_window(c)) continue;
                break;
            }
            bool n1 = false, n2 = false;
            TimestampTz run_after = DatumGetTimestampTz(slot_getattr(t->ready_found, t->ready_col[kReadyRunAfter], &n1));
            if (n1 || run_after > now || deleted_by_running(t)) continue;
            std::int64_t id = DatumGetInt64(slot_getattr(t->ready_found, t->ready_col[kReadyId], &n2));
            bool no_tid = true;
            Datum row_tid = t->ready_col[kReadyRowTid] == 0
                                ? static_cast<Datum>(0)
                                : slot_getattr(t->ready_found, t->ready_col[kReadyRowTid], &no_tid);
            bool found = (!no_tid && fetch_at(t, c->tenant, id, reinterpret_cast<ItemPointer>(DatumGetPointer(row_tid)))) ||
                         fetch_by_key(t, c->tenant, id);
            if (!found || !claimable(t, now)) continue;
            c->ready_tid = t->ready_found->tts_tid;
            return true;
        }
        return false;
    });
}

// Locks the version read unless another transaction holds it, as FOR UPDATE SKIP LOCKED
// does: true when it is held (then, unchanged, in `found`). A version changed after the
// snapshot is not followed: under READ COMMITTED it is skipped (left to a later claim;
// its newer version is most often another worker's fresh claim, whose finish a lock
// would hold up); under REPEATABLE READ and SERIALIZABLE it is a serialization failure.
bool hold_found(Table* t) {
    ItemPointerData tid = t->found->tts_tid;
    bool isnull = false;
    std::int64_t id = DatumGetInt64(found_value(t, kId, &isnull));
    TM_FailureData tmfd;
    TM_Result l = table_tuple_lock(t->rel, &tid, t->snapshot, t->found, t->cid, LockTupleNoKeyExclusive,
                                   LockWaitSkip, 0, &tmfd);
    if ((l == TM_Updated || l == TM_Deleted) && IsolationUsesXactSnapshot()) serialization_failure(id);
    return l == TM_Ok;
}

// Writes the claimed version of the row in `found` to the heap, and remembers it in the
// cursor for complete(). wait: see write_heap().
TM_Result reserve_found(Cursor* c, TimestampTz lease_until, bool wait) {
    Table* t = c->table;
    ItemPointerData tid = t->found->tts_tid;
    TM_FailureData tmfd;
    compat::IndexUpdate indexed = compat::IndexUpdate::kNone;
    c->in_written = -1;
    build_claim(t, lease_until);
    TM_Result r = write_heap(t, &tid, wait, &tmfd, &indexed);
    if (r == TM_Ok) {
        c->reserved[c->nreserved] = t->written->tts_tid;
        c->indexed[c->nreserved] = indexed;
        c->in_written = c->nreserved++;
    }
    return r;
}

// Writes the claimed version of the candidate next_candidate() returned to the heap and
// removes its ready row, as the fence trigger does. False when another transaction holds
// it or changed it after the snapshot (the ready row is then that transaction's).
bool reserve(Cursor* c, TimestampTz lease_until) {
    return guard([c, lease_until] {
        Table* t = c->table;
        // A row no transaction has touched since it was written is updated at once,
        // without a lock of its own; a row another claimer has touched goes to the lock,
        // which skips it while that claimer holds it.
        bool reserved = false;
        if (untouched(t)) {
            TM_Result r = reserve_found(c, lease_until, false);
            if (r == TM_SelfModified) return false;
            reserved = r == TM_Ok;
        }
        if (!reserved) {
            if (!hold_found(t)) return false;
            if (reserve_found(c, lease_until, true) != TM_Ok)
                elog(ERROR, "pg_baton could not update a delivery it holds locked");
        }
        // The upkeep of the move, as the fence trigger does it: the claim hints, the ready
        // row read (removed at its tid), the new lease.
        // The version written differs from the one read in what build_claim() wrote.
        upkeep::Version before = upkeep::read(t->found, side_columns(t));
        upkeep::Version after = before;
        after.core.has_status = true;
        after.core.status = delivery::Status::kClaimed;
        after.core.generation = DatumGetInt64(t->written->tts_values[t->col[kGeneration] - 1]);
        after.core.lease_until = lease_until;
        after.core.has_lease = before.tenant != nullptr;  // the id is the primary key's
        upkeep::move(&t->side, &before, &after, &c->ready_tid);
        return true;
    });
}

// Writes the index entries of the i-th row reserved, and reads claim's result columns
// into values/nulls (by-reference ones copied into the current context) and its position.
void complete(Cursor* c, int i, Datum* values, bool* nulls, claim_hint::Position* at) {
    guard([c, i, values, nulls, at] {
        Table* t = c->table;
        // The version written: still in `written` when it was the last one reserved.
        TupleTableSlot* slot = t->written;
        if (c->in_written != i) {
            slot = t->found;
            if (!table_tuple_fetch_row_version(t->rel, &c->reserved[i], SnapshotAny, slot))
                elog(ERROR, "pg_baton cannot read a delivery it claimed");
        }
        write_indexes(t, slot, c->indexed[i]);
        static const Column kResult[8] = {kId,      kGeneration, kLeaseUntil, kDedupKey,
                                          kPayload, kBinding,    kAttempts,   kRunId};
        for (int k = 0; k < 8; k++) values[k] = copied(t, slot, kResult[k], &nulls[k]);
        bool isnull = false;
        *at = {DatumGetInt32(slot_getattr(slot, t->col[kPriority], &isnull)), DatumGetInt64(values[0])};
    });
}

// The version in `found` as a settling call reports it, its target copied out; the
// role is the store's to add.
FoundDelivery read_found(Table* t) {
    std::optional<delivery::Status> status = found_status(t);
    bool isnull = false;
    if (!status)
        elog(ERROR, "delivery %lld has an unknown status",
             static_cast<long long>(DatumGetInt64(found_value(t, kId, &isnull))));
    return {true, found_row(t, *status), TextDatumGetCString(found_value(t, kTarget, &isnull)), InvalidOid, 0};
}

// True when the core says the caller at `generation` holds the lease of the version read.
bool held(Table* t, std::int64_t generation) {
    std::optional<delivery::Status> status = found_status(t);
    return status && delivery::holds_lease(found_row(t, *status), generation);
}

// The settling write's changes to the version read.
void build_settle(Table* t, Datum outcome, const Jsonb* result, bool keep_result) {
    begin_write(t);
    put(t, kStatus, outcome);
    put(t, kLeaseUntil, 0, true);
    put(t, kSettledAt, TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()));
    if (!keep_result) put(t, kResult, PointerGetDatum(result), result == nullptr);
}


}  // namespace

// The settle under guard() (see the header).
FoundDelivery settle(Table* t, const pg_uuid_t* tenant, std::int64_t id, std::int64_t generation,
                     delivery::Status outcome, const Jsonb* result, bool keep_result) {
    const char* outcome_name = delivery::status_name(outcome);
    return guard([t, tenant, id, generation, outcome, outcome_name, result, keep_result] {
        FoundDelivery s{};
        if (!fetch_claimed(t, tenant, id) && !fetch_by_key(t, tenant, id)) return s;
        if (!held(t, generation)) return read_found(t);
        Datum outcome_text = CStringGetTextDatum(outcome_name);
        ItemPointerData tid = t->found->tts_tid;
        build_settle(t, outcome_text, result, keep_result);
        TM_FailureData tmfd;
        TM_Result r = write_over(t, &tid, true, &tmfd);
        if (r == TM_Updated || r == TM_Deleted) {
            // Changed since the snapshot (a reap, a retry, a purge): as an UPDATE does,
            // check the latest version again under READ COMMITTED.
            if (IsolationUsesXactSnapshot()) serialization_failure(id);
            TM_Result l = lock_latest(t, &tid, LockWaitBlock);
            if (l == TM_Deleted) return s;
            if (l != TM_Ok) elog(ERROR, "pg_baton could not lock delivery %lld", static_cast<long long>(id));
            if (!held(t, generation)) return read_found(t);
            tid = t->found->tts_tid;
            build_settle(t, outcome_text, result, keep_result);
            r = write_over(t, &tid, true, &tmfd);
        }
        if (r != TM_Ok)
            elog(ERROR, "pg_baton could not update delivery %lld (result %d)", static_cast<long long>(id),
                 static_cast<int>(r));
        // The upkeep of the move, as the fence trigger does it: the lease's row goes. The
        // version written differs from the one read in what build_settle() wrote.
        upkeep::Version before = upkeep::read(t->found, side_columns(t));
        upkeep::Version after = before;
        after.core.has_status = true;
        after.core.status = outcome;
        after.core.has_lease = false;
        upkeep::move(&t->side, &before, &after);
        // `found` still holds the version read; the version written differs in its status.
        s = read_found(t);
        s.row.status = outcome;
        return s;
    });
}

// Reserves up to n claimable rows of the range, then completes and returns them (see the header).
Claimed claim(Table* t, const ClaimCall& call, ClaimRange range, claim_hint::Position from, std::int64_t n) {
    if (!t->has_lease_until) {
        Datum start = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
        Interval* lease = call.lease;
        t->lease_until = guard([start, lease] {
            return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval, start, IntervalPGetDatum(lease)));
        });
        t->has_lease_until = true;
    }
    Cursor* cursor = begin_claim(t, call.tenant, call.target, range, from, static_cast<int>(n));
    std::int64_t reserved = 0;
    while (reserved < n) {
        if (!next_candidate(cursor, call.now)) break;
        if (reserve(cursor, t->lease_until)) reserved++;
    }
    Claimed got{0, claim_hint::kEnd};
    for (std::int64_t i = 0; i < reserved; i++) {
        Datum values[kClaimColumns];
        bool nulls[kClaimColumns];
        complete(cursor, static_cast<int>(i), values, nulls, &got.last);
        remember_claimed(t, call.tenant, DatumGetInt64(values[0]), &cursor->reserved[i]);
        put_claimed(call, values, nulls);
        got.n++;
    }
    end_claim(cursor);
    return got;
}

namespace {

// True when the default of column c is the constant text `value` ('pending' for status).
bool default_is(Table* t, Column c, const char* value) {
    Node* expr = build_column_default(t->rel, t->col[c]);
    if (expr == nullptr || !IsA(expr, Const) || castNode(Const, expr)->constisnull ||
        castNode(Const, expr)->consttype != TEXTOID)
        return false;
    text* s = DatumGetTextPP(castNode(Const, expr)->constvalue);
    return std::string_view(VARDATA_ANY(s), VARSIZE_ANY_EXHDR(s)) == value;
}

}  // namespace

// The checks of insert(), before any write (see the header).
bool can_insert(Table* t, const NewDelivery* items, int n) {
    for (int i = 0; i < n; i++)
        if (items[i].run_id != nullptr) return false;
    if (!can_claim(t)) return false;  // a side table's trigger: the statement
    return guard([t, n] {
        if (!default_is(t, kStatus, delivery::status_name(delivery::Status::kPending))) return false;
        // The defaults of the columns an enqueue leaves out, as the INSERT would take
        // them (a column a user added, too); the identity column's is the id given.
        // A default's expression checks a domain itself (CoerceToDomain); the columns
        // given and those left NULL are checked by insert(), as the executor checks them.
        if (t->defaults == nullptr) {
            TupleDesc desc = RelationGetDescr(t->rel);
            const Column given[] = {kTenant, kId, kTarget, kDedupKey, kPayload, kBinding,
                                    kRunAfter, kPriority, kMaxAttempts, kRunId};
            t->defaults = static_cast<ExprState**>(palloc0(sizeof(ExprState*) * desc->natts));
            t->insert_domains = static_cast<AttrNumber*>(palloc0(sizeof(AttrNumber) * (desc->natts + 1)));
            t->insert_domain_state = static_cast<void**>(palloc0(sizeof(void*) * desc->natts));
            int ndomains = 0;
            for (int a = 0; a < desc->natts; a++) {
                if (TupleDescAttr(desc, a)->attisdropped) continue;
                bool is_given = false;
                for (Column c : given) is_given = is_given || t->col[c] == a + 1;
                Node* expr = is_given ? nullptr : build_column_default(t->rel, a + 1);
                if (expr != nullptr)
                    t->defaults[a] = ExecPrepareExpr(reinterpret_cast<Expr*>(expr), t->estate);
                else if (is_domain(t->rel, a + 1))
                    t->insert_domains[ndomains++] = static_cast<AttrNumber>(a + 1);
            }
        }
        if (t->many == nullptr) t->many = side_rows::make_slots(t->rel, n, &t->nmany);
        // The indexes too, here, outside the subtransaction insert() runs in: opened in
        // it, they would belong to its resource owner and leak when it ends.
        open_indexes(t);
        return true;
    });
}

// Each row built from its item and the columns' defaults and checked; a round of them
// written to the heap by one heap_multi_insert (as COPY writes them), then to the
// indexes, then their ready rows the same way.
void insert(Table* t, const pg_uuid_t* tenant, const NewDelivery* items, int n, const std::int64_t* ids) {
    const int many = t->nmany;  // rows a heap_multi_insert
    // baton.ready opened here and closed before the end, inside the subtransaction.
    upkeep::Writers side = upkeep::writers(t->rel);
    TupleDesc desc = RelationGetDescr(t->rel);
    ExprContext* econtext = GetPerTupleExprContext(t->estate);
    side_rows::ReadyRow* rows = static_cast<side_rows::ReadyRow*>(palloc(sizeof(side_rows::ReadyRow) * many));
    TimestampTz now = GetCurrentTransactionStartTimestamp();  // now()
    for (int done = 0, k = 0; done < n; done += k) {
        Size bytes = 0;
        for (k = 0; k < many && done + k < n && bytes < side_rows::kManyBytes; k++) {
            const NewDelivery& d = items[done + k];
            TupleTableSlot* slot = t->many[k];
            ExecClearTuple(slot);
            for (int a = 0; a < desc->natts; a++) {
                slot->tts_values[a] = 0;
                slot->tts_isnull[a] = true;
                if (t->defaults[a] != nullptr)
                    slot->tts_values[a] = ExecEvalExprSwitchContext(t->defaults[a], econtext, &slot->tts_isnull[a]);
            }
            TimestampTz run_after = d.has_run_after ? d.run_after : now;
            put(slot, t->col[kTenant], UUIDPGetDatum(const_cast<pg_uuid_t*>(tenant)));
            put(slot, t->col[kId], Int64GetDatum(ids[done + k]));
            put(slot, t->col[kTarget], PointerGetDatum(d.target));
            put(slot, t->col[kDedupKey], PointerGetDatum(d.dedup_key));
            put(slot, t->col[kPayload], JsonbPGetDatum(d.payload));
            put(slot, t->col[kBinding], JsonbPGetDatum(d.binding));
            put(slot, t->col[kRunAfter], TimestampTzGetDatum(run_after));
            put(slot, t->col[kPriority], Int32GetDatum(d.priority));
            put(slot, t->col[kMaxAttempts], Int32GetDatum(d.max_attempts));
            put(slot, t->col[kRunId], static_cast<Datum>(0), true);
            ExecStoreVirtualTuple(slot);
            for (int i = 0; t->insert_domains[i] != 0; i++) {
                AttrNumber a = t->insert_domains[i];
                check_domain(t, a, slot->tts_values[a - 1], slot->tts_isnull[a - 1], &t->insert_domain_state[i]);
            }
            if (t->rel->rd_att->constr != nullptr) ExecConstraints(t->rri, slot, t->estate);
            // The row formed in the slot's memory (the defaults' values live in the
            // per-tuple memory, reset for the next row), and its size counted.
            bytes += ExecFetchSlotHeapTuple(slot, true, nullptr)->t_len;
            ResetPerTupleExprContext(t->estate);
            rows[k] = {d.target, d.priority, ids[done + k], run_after, &slot->tts_tid};
        }
        table_multi_insert(t->rel, t->many, k, t->cid, 0, nullptr);
        for (int j = 0; j < k; j++) {
            compat::insert_index_tuples(t->rri, t->many[j], t->estate, false);
            ResetPerTupleExprContext(t->estate);
        }
        upkeep::inserted(&side, tenant, rows, k);
    }
    pfree(rows);
    upkeep::close(&side);
    // Their creation time is now(), this transaction's start: one that began more than
    // kEarly ago may have written it behind purge's floor, reported as the deliveries'
    // trigger reports a row the executor inserts.
    if (now < GetCurrentTimestamp() - scan_floor::kEarly) launcher::report_purge_floor(now);
    // The indexes were opened outside the subtransaction this runs in (can_insert()), and
    // their access methods' insert state was made inside it: ended here, before it ends.
    compat::end_index_inserts(t->rri);
}

// After insert() raised (see the header).
void insert_failed(Table* t) { compat::forget_index_inserts(t->rri); }

namespace {

// The first row of `table` whose primary key `index` equals keys[0..nkeys), under
// snapshot: each found column of cols (0: not wanted) read into values, its null flag
// into nulls. False when there is none.
bool probe(const char* table, const char* index, ScanKeyData* keys, int nkeys, Snapshot snapshot,
           const char* const* names, int ncols, Datum* values, bool* nulls) {
    // The table locked first, then its index: see relations.hpp.
    Oid indexid = InvalidOid;
    Relation rel = relations::open_with_index(table, index, AccessShareLock, &indexid);
    TupleDesc desc = RelationGetDescr(rel);
    const AttrNumber* cols = relations::attnums(rel, names, ncols);
    for (int k = 0; k < nkeys; k++) {
        if (cols[k] == 0) elog(ERROR, "pg_baton cannot find the key columns of baton.%s", table);
        keys[k].sk_attno = cols[k];
        keys[k].sk_collation = TupleDescAttr(desc, cols[k] - 1)->attcollation;
    }
    SysScanDesc scan = systable_beginscan(rel, indexid, true, snapshot, nkeys, keys);
    HeapTuple tuple = systable_getnext(scan);
    bool found = HeapTupleIsValid(tuple);
    for (int c = nkeys; c < ncols && found; c++) {
        nulls[c] = true;
        if (cols[c] > 0) values[c] = heap_getattr(tuple, cols[c], desc, &nulls[c]);
    }
    systable_endscan(scan);
    table_close(rel, AccessShareLock);
    return found;
}

}  // namespace

// Probes of target_bindings' and paused_targets' primary keys (see the header).
authz_cache::Binding binding(const pg_uuid_t* tenant, const char* target, int target_len) {
    return guard([tenant, target, target_len] {
        authz_cache::Binding b{InvalidOid, 1, false};
        text* target_text = cstring_to_text_with_len(target, target_len);
        Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());
        ScanKeyData keys[2];
        ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_UUID_EQ, UUIDPGetDatum(const_cast<pg_uuid_t*>(tenant)));
        ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_TEXTEQ, PointerGetDatum(target_text));
        Datum values[kBindingColumns];
        bool nulls[kBindingColumns];
        if (probe("target_bindings", "target_bindings_pkey", keys, 2, snapshot, kBindingColumnNames, kBindingColumns,
                  values, nulls)) {
            if (!nulls[kBindingRole]) b.role = DatumGetObjectId(values[kBindingRole]);
            if (!nulls[kBindingWeight]) b.weight = DatumGetInt32(values[kBindingWeight]);
            b.paused = !nulls[kBindingPausedAt];
        }
        if (!b.paused) {
            ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_TEXTEQ, PointerGetDatum(target_text));
            const char* const names[] = {"target"};
            b.paused = probe("paused_targets", "paused_targets_pkey", keys, 1, snapshot, names, 1, values, nulls);
        }
        UnregisterSnapshot(snapshot);
        return b;
    });
}

}  // namespace baton::pg::delivery_direct
