// The side tables of baton.deliveries (see side_rows.hpp).
#include <cstring>

#include "core/scan_floor.hpp"

#include "pg/runtime/cache.hpp"
#include "pg/runtime/relations.hpp"
#include "pg/deliveries/side_rows.hpp"
#include "pg/workers/launcher.hpp"

namespace baton::pg::side_rows {

namespace {

// What this file knows of each side table: its name and the columns it writes (found by
// name once per backend, relations::attnums); a row is found by its primary key.
//   leases: (tenant, id, generation, lease_until), found by its primary key
//           leases_pkey (lease_until, tenant, id, generation)
//   ready:  (tenant, target, rank, id, run_after, row_tid), rank the priority negated,
//           found by its primary key ready_pkey (target, tenant, rank, id); row_tid
//           NULL when not known
constexpr int kMaxColumns = 6;
struct Spec {
    const char* table;
    const char* const* columns;
    int ncolumns;
};
enum LeaseColumn { kLeaseTenant, kLeaseId, kLeaseGeneration, kLeaseUntil, kLeaseColumns };
const char* const kLeaseColumnNames[kLeaseColumns] = {"tenant", "id", "generation", "lease_until"};
enum ReadyColumn { kReadyTenant, kReadyTarget, kReadyRank, kReadyId, kReadyRunAfter, kReadyRowTid, kReadyColumns };
const char* const kReadyColumnNames[kReadyColumns] = {"tenant", "target", "rank", "id", "run_after", "row_tid"};
const Spec kSpecs[2] = {{"leases", kLeaseColumnNames, kLeaseColumns}, {"ready", kReadyColumnNames, kReadyColumns}};

const Spec& spec(Table table) { return kSpecs[table == Table::kLeases ? 0 : 1]; }

// The shards of the side tables found for shards of baton.deliveries, per backend: a
// shard keeps its oid until Citus moves or splits it (a new relation, a relcache
// invalidation forgets the pair that names it). At most kShards pairs: the next new one
// empties the table.
constexpr long kShards = 64;
struct ShardKey {
    Oid deliveries;
    Table table;
};
bool shard_depends(const ShardKey& k, const Oid& side, Oid relid) { return k.deliveries == relid || side == relid; }
cache::Map<ShardKey, Oid, cache::Blobs, shard_depends> g_shards{"pg_baton side shards", kShards,
                                                                cache::Forgets::kDependents};

// The shard of baton.<table> colocated with `shard`, a shard of baton.deliveries named
// deliveries_<shard id>: the shard of that table with the same hash range, from Citus'
// metadata, which every node of a distributed install holds.
Oid colocated(Relation shard, Table table) {
    Oid relid = RelationGetRelid(shard);
    ShardKey key{relid, table};
    if (const Oid* side = g_shards.find(key)) return *side;
    const char* name = RelationGetRelationName(shard);
    const char* underscore = std::strrchr(name, '_');
    int64 shardid = underscore != nullptr ? pg_strtoint64(underscore + 1) : 0;
    Oid side = InvalidOid;
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_baton could not connect to SPI");
    Oid types[2] = {INT8OID, TEXTOID};
    Datum values[2] = {Int64GetDatum(shardid), CStringGetTextDatum(spec(table).table)};
    int rc = SPI_execute_with_args(
        "SELECT pg_catalog.to_regclass(pg_catalog.shard_name(l.logicalrelid, l.shardid))::pg_catalog.oid "
        "FROM pg_catalog.pg_dist_shard s JOIN pg_catalog.pg_dist_shard l ON l.logicalrelid OPERATOR(pg_catalog.=) "
        "pg_catalog.to_regclass('baton.' OPERATOR(pg_catalog.||) $2) "
        "AND l.shardminvalue OPERATOR(pg_catalog.=) s.shardminvalue "
        "WHERE s.shardid OPERATOR(pg_catalog.=) $1",
        2, types, values, nullptr, true, 1);
    if (rc == SPI_OK_SELECT && SPI_processed == 1) {
        bool isnull = false;
        Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
        if (!isnull) side = DatumGetObjectId(d);
    }
    SPI_finish();
    if (!OidIsValid(side))
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("pg_baton cannot find the shard of baton.%s that goes with shard %s", spec(table).table,
                               name),
                        errhint("Run SELECT baton.distribute() on the coordinator after ALTER EXTENSION pg_baton "
                                "UPDATE.")));
    *g_shards.enter(key) = side;
    return side;
}

}  // namespace

// The relation and what its writes need: its indexes, a slot and an executor state
// (made by the first write that needs them, prepare()), and the probe of its primary key
// (begun on first use).
struct Writer {
    Table table;
    Relation rel;
    EState* estate;
    ResultRelInfo* rri;
    TupleTableSlot* slot;
    Relation key;
    bool by_statement;  // the table has triggers not pg_baton's (pg_repack's, a user's): write by SQL
    bool adopted;       // rel is the caller's (adopt()): close() leaves it open
    IndexScanDesc probe;
    TupleTableSlot* found;
    SnapshotData dirty;
    AttrNumber col[kMaxColumns];
    TupleTableSlot** many;  // add_ready_all()'s rows of one heap_multi_insert (nmany), made on first use
    int nmany;
};

namespace {

// A writer over rel, opened by the caller.
Writer* writer_over(Relation rel, Table table, bool by_statement) {
    const Spec& s = spec(table);
    Writer* w = static_cast<Writer*>(palloc0(sizeof(Writer)));
    w->table = table;
    w->rel = rel;
    const AttrNumber* cols = relations::attnums(w->rel, s.columns, s.ncolumns);
    for (int c = 0; c < s.ncolumns; c++) {
        w->col[c] = cols[c];
        if (w->col[c] == 0)
            elog(ERROR, "pg_baton cannot find column baton.%s.%s", s.table, s.columns[c]);
    }
    w->by_statement = by_statement;
    return w;
}

}  // namespace

// The side table itself next to baton.deliveries; on Citus the colocated shard.
Writer* open(Relation deliveries, Table table) {
    Oid relid = RelationGetRelid(deliveries) != relations::relid("deliveries") ? colocated(deliveries, table)
                : table == Table::kLeases                                      ? relations::relid("leases")
                                                                               : relations::relid("ready");
    Relation rel = table_open(relid, RowExclusiveLock);
    return writer_over(rel, table, !relations::only_own_triggers(rel));
}

Writer* adopt(Relation rel, Table table) {
    Writer* w = writer_over(rel, table, false);
    w->adopted = true;
    return w;
}

namespace {

// Opens the table's indexes and makes the executor state and the slot of its writes, on
// the first write that needs them (a claim's removal of a ready row it has read needs
// none).
void prepare(Writer* w) {
    if (w->estate != nullptr) return;
    w->estate = CreateExecutorState();
    w->rri = makeNode(ResultRelInfo);
    InitResultRelInfo(w->rri, w->rel, 0, nullptr, 0);
    ExecOpenIndices(w->rri, false);
    w->slot = MakeSingleTupleTableSlot(RelationGetDescr(w->rel), &TTSOpsVirtual);
    // The key index: the table's primary key (its shard's on Citus), as the relation
    // cache knows it. Not by name: a REINDEX CONCURRENTLY builds ready_pkey_ccnew, not
    // valid until it takes the name.
    Oid pkey = compat::primary_key(w->rel);
    for (int i = 0; i < w->rri->ri_NumIndices; i++)
        if (RelationGetRelid(w->rri->ri_IndexRelationDescs[i]) == pkey) w->key = w->rri->ri_IndexRelationDescs[i];
    if (w->key == nullptr) elog(ERROR, "pg_baton cannot find the primary key of baton.%s", spec(w->table).table);
}

}  // namespace

// The table's relation cache entry has triggers other than pg_baton's own.
bool has_triggers(Table table) {
    Relation rel = relations::open(table == Table::kLeases ? "leases" : "ready", AccessShareLock);
    bool triggers = !relations::only_own_triggers(rel);
    table_close(rel, NoLock);
    return triggers;
}

// The slots of one heap_multi_insert of up to n rows of rel, over a copy of its
// descriptor: a slot over the relation's own pins it in the current resource owner, and
// pinning and releasing it for each of a thousand slots costs more than the multi-insert
// saves.
TupleTableSlot** make_slots(Relation rel, int n, int* nslots) {
    *nslots = n < kManyRows ? n : kManyRows;
    TupleDesc desc = CreateTupleDescCopy(RelationGetDescr(rel));
    TupleTableSlot** slots = static_cast<TupleTableSlot**>(palloc(sizeof(TupleTableSlot*) * *nslots));
    for (int i = 0; i < *nslots; i++) slots[i] = MakeSingleTupleTableSlot(desc, &TTSOpsHeapTuple);
    return slots;
}

// Drops the slots make_slots() made, and their descriptor (nothing for nullptr).
void drop_slots(TupleTableSlot** slots, int nslots) {
    if (slots == nullptr) return;
    TupleDesc desc = nslots > 0 ? slots[0]->tts_tupleDescriptor : nullptr;
    for (int i = 0; i < nslots; i++) ExecDropSingleTupleTableSlot(slots[i]);
    if (desc != nullptr) FreeTupleDesc(desc);
    pfree(slots);
}

// Ends the probe, frees the slots and the executor state, keeps the lock.
void close(Writer* w) {
    if (w->probe != nullptr) {
        index_endscan(w->probe);
        ExecDropSingleTupleTableSlot(w->found);
    }
    drop_slots(w->many, w->nmany);
    if (w->estate != nullptr) {
        ExecDropSingleTupleTableSlot(w->slot);
        ExecCloseIndices(w->rri);
        FreeExecutorState(w->estate);
    }
    if (!w->adopted) table_close(w->rel, NoLock);
    pfree(w);
}

namespace {

// True when the key index holds a row equal to `keys` (its first n columns, each compared
// by procs[k]) other than the one at `except` (nullptr: any), seen by a dirty snapshot
// (committed or not); the row is left in w->found. Begins the probe, or rescans it.
bool find(Writer* w, const Datum* keys, const RegProcedure* procs, int n, ItemPointer except = nullptr) {
    prepare(w);
    if (w->probe == nullptr) {
        InitDirtySnapshot(w->dirty);
        w->probe = compat::index_scan(w->rel, w->key, &w->dirty, n);
        w->found = table_slot_create(w->rel, nullptr);
    }
    ScanKeyData scan[kMaxColumns];
    for (int k = 0; k < n; k++) {
        ScanKeyInit(&scan[k], k + 1, BTEqualStrategyNumber, procs[k], keys[k]);
        scan[k].sk_collation = w->key->rd_indcollation[k];
    }
    index_rescan(w->probe, scan, n, nullptr, 0);
    while (index_getnext_slot(w->probe, ForwardScanDirection, w->found))
        if (except == nullptr || !ItemPointerEquals(&w->found->tts_tid, except)) return true;
    return false;
}

// Sets `slot` to `values` (in the order of the table's Spec; `nulls` for those that are
// NULL, nullptr when none is).
void set_row(Writer* w, TupleTableSlot* slot, const Datum* values, const bool* nulls) {
    const Spec& s = spec(w->table);
    ExecClearTuple(slot);
    int natts = RelationGetDescr(w->rel)->natts;
    for (int i = 0; i < natts; i++) {
        slot->tts_values[i] = 0;
        slot->tts_isnull[i] = true;
    }
    for (int c = 0; c < s.ncolumns; c++) {
        slot->tts_values[w->col[c] - 1] = values[c];
        slot->tts_isnull[w->col[c] - 1] = nulls != nullptr && nulls[c];
    }
    ExecStoreVirtualTuple(slot);
}

// The index entries of the row just written to the heap from `slot`, as an INSERT writes
// them (the table has no constraint but NOT NULL, which the values keep, and its primary
// key), then the deletion of any other row with its key (`key`, the primary key's n
// columns, compared by procs). The primary key's insert checks for one without raising
// (compat::insert_new_index_tuples), so that only a key found taken costs a probe: there
// is none but after a write that passed no trigger, or a lease written again (a renew
// back to an earlier lease_until of the same generation, in the transaction that wrote
// it).
void index_and_replace(Writer* w, TupleTableSlot* slot, const Datum* key, const RegProcedure* procs, int n) {
    bool maybe_taken = compat::insert_new_index_tuples(w->rri, slot, w->estate);
    ResetPerTupleExprContext(w->estate);
    if (!maybe_taken) return;
    ItemPointerData written = slot->tts_tid;
    while (find(w, key, procs, n, &written)) simple_heap_delete(w->rel, &w->found->tts_tid);
}

// Writes `values` (see set_row()) as the one row with its key: a heap insert, then
// index_and_replace().
void put(Writer* w, const Datum* values, const bool* nulls, const Datum* key, const RegProcedure* procs, int n) {
    prepare(w);
    set_row(w, w->slot, values, nulls);
    table_tuple_insert(w->rel, w->slot, GetCurrentCommandId(true), 0, nullptr);
    index_and_replace(w, w->slot, key, procs, n);
}

// Runs `sql` over the writer's relation (its name spliced in for %s, schema-qualified)
// with the parameters `values` of `types`, through SPI: for a table with triggers not
// pg_baton's, which a heap write would pass by (pg_repack's, which logs the writes made
// while it copies the table; a user's).
void run_statement(Writer* w, const char* sql, int n, const Oid* types, const Datum* values) {
    const char* name = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(w->rel)),
                                                  RelationGetRelationName(w->rel));
    char* text = psprintf(sql, name);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_baton could not connect to SPI");
    int rc = SPI_execute_with_args(text, n, const_cast<Oid*>(types), const_cast<Datum*>(values), nullptr, false, 0);
    if (rc < 0) elog(ERROR, "pg_baton could not write %s: %s", name, SPI_result_code_string(rc));
    SPI_finish();
    pfree(text);
}

#define READY_KEY_SQL                                                                                       \
    "tenant OPERATOR(pg_catalog.=) $1 AND target OPERATOR(pg_catalog.=) $2 AND rank OPERATOR(pg_catalog.=) $3 " \
    "AND id OPERATOR(pg_catalog.=) $4"
const Oid kReadyTypes[kReadyRowTid] = {UUIDOID, TEXTOID, INT8OID, INT8OID, TIMESTAMPTZOID};

// The key of a ready row, as ready_pkey (target, tenant, rank, id) orders it, and its
// equality procedures.
const RegProcedure kReadyProcs[4] = {F_TEXTEQ, F_UUID_EQ, F_INT8EQ, F_INT8EQ};
void ready_key(const Datum* values, Datum* key) {
    key[0] = values[kReadyTarget];
    key[1] = values[kReadyTenant];
    key[2] = values[kReadyRank];
    key[3] = values[kReadyId];
}

// The values of a ready row (in the order of its Spec) and which are NULL.
void ready_values(const pg_uuid_t* tenant, const ReadyRow& r, Datum* values, bool* nulls) {
    values[kReadyTenant] = UUIDPGetDatum(const_cast<pg_uuid_t*>(tenant));
    values[kReadyTarget] = PointerGetDatum(r.target);
    values[kReadyRank] = Int64GetDatum(rank_of(r.priority));
    values[kReadyId] = Int64GetDatum(r.id);
    values[kReadyRunAfter] = TimestampTzGetDatum(r.run_after);
    values[kReadyRowTid] = PointerGetDatum(const_cast<ItemPointerData*>(r.row_tid));
    for (int c = 0; c < kReadyColumns; c++) nulls[c] = false;
    nulls[kReadyRowTid] = r.row_tid == nullptr;
}

const Oid kLeaseTypes[kLeaseColumns] = {UUIDOID, INT8OID, INT8OID, TIMESTAMPTZOID};

// A lease row's values, in the order of its Spec.
void lease_values(const pg_uuid_t* tenant, std::int64_t id, std::int64_t generation, TimestampTz lease_until,
                  Datum* values) {
    values[kLeaseTenant] = UUIDPGetDatum(const_cast<pg_uuid_t*>(tenant));
    values[kLeaseId] = Int64GetDatum(id);
    values[kLeaseGeneration] = Int64GetDatum(generation);
    values[kLeaseUntil] = TimestampTzGetDatum(lease_until);
}

// The key of a lease row, as leases_pkey (lease_until, tenant, id, generation) orders it,
// and its equality procedures.
const RegProcedure kLeaseProcs[4] = {F_TIMESTAMPTZ_EQ, F_UUID_EQ, F_INT8EQ, F_INT8EQ};
void lease_key(const Datum* values, Datum* key) {
    key[0] = values[kLeaseUntil];
    key[1] = values[kLeaseTenant];
    key[2] = values[kLeaseId];
    key[3] = values[kLeaseGeneration];
}

}  // namespace

// put(); by SQL (ON CONFLICT DO NOTHING) for a table with triggers.
void add_lease(Writer* w, const pg_uuid_t* tenant, std::int64_t id, std::int64_t generation,
               TimestampTz lease_until) {
    // A lease that expires before the reaper's next batches may have moved their scan
    // floor past it is reported (core/scan_floor.hpp).
    if (scan_floor::is_early(lease_until, GetCurrentTimestamp())) launcher::report_early_lease(lease_until);
    Datum values[kLeaseColumns];
    lease_values(tenant, id, generation, lease_until, values);
    if (w->by_statement) {
        run_statement(w, "INSERT INTO %s (tenant, id, generation, lease_until) VALUES ($1, $2, $3, $4) "
                         "ON CONFLICT DO NOTHING", kLeaseColumns, kLeaseTypes, values);
        return;
    }
    Datum key[4];
    lease_key(values, key);
    put(w, values, nullptr, key, kLeaseProcs, 4);
}

// A probe of the primary key, then the heap delete; by SQL for a table with triggers. Only
// the transaction that holds the delivery's row ends its lease, and reap deletes a row
// only once no delivery holds it, so no other transaction deletes the row found.
void remove_lease(Writer* w, const pg_uuid_t* tenant, std::int64_t id, std::int64_t generation,
                  TimestampTz lease_until) {
    Datum values[kLeaseColumns];
    lease_values(tenant, id, generation, lease_until, values);
    if (w->by_statement) {
        run_statement(w, "DELETE FROM %s WHERE lease_until OPERATOR(pg_catalog.=) $4 AND tenant "
                         "OPERATOR(pg_catalog.=) $1 AND id OPERATOR(pg_catalog.=) $2 AND generation "
                         "OPERATOR(pg_catalog.=) $3", kLeaseColumns, kLeaseTypes, values);
        return;
    }
    Datum key[4];
    lease_key(values, key);
    if (find(w, key, kLeaseProcs, 4)) simple_heap_delete(w->rel, &w->found->tts_tid);
}

// put(), which replaces a ready row left behind by a write that passed no trigger
// (session_replication_role = replica), so that the delivery becomes claimable again; by
// SQL for a table with triggers.
void add_ready(Writer* w, const pg_uuid_t* tenant, const text* target, std::int32_t priority, std::int64_t id,
               TimestampTz run_after, const ItemPointerData* row_tid) {
    Datum values[kReadyColumns];
    bool nulls[kReadyColumns];
    ready_values(tenant, {target, priority, id, run_after, row_tid}, values, nulls);
    if (w->by_statement) {
        run_statement(w, "DELETE FROM %s WHERE " READY_KEY_SQL, 4, kReadyTypes, values);
        run_statement(w, "INSERT INTO %s (tenant, target, rank, id, run_after) VALUES ($1, $2, $3, $4, $5)",
                      kReadyRowTid, kReadyTypes, values);
        return;
    }
    Datum key[4];
    ready_key(values, key);
    put(w, values, nulls, key, kReadyProcs, 4);
}

// add_ready() for each row, their heap rows written kManyRows at a time by one
// heap_multi_insert (one WAL record and one buffer lock a page, as COPY writes them),
// then the index entries of each; by SQL, row by row, for a table with triggers.
void add_ready_all(Writer* w, const pg_uuid_t* tenant, const ReadyRow* rows, int n) {
    if (w->by_statement) {
        for (int i = 0; i < n; i++)
            add_ready(w, tenant, rows[i].target, rows[i].priority, rows[i].id, rows[i].run_after, rows[i].row_tid);
        return;
    }
    prepare(w);
    if (w->many == nullptr || (n > w->nmany && w->nmany < kManyRows)) {
        drop_slots(w->many, w->nmany);
        w->many = make_slots(w->rel, n, &w->nmany);
    }
    CommandId cid = GetCurrentCommandId(true);
    Datum values[kReadyColumns];
    bool nulls[kReadyColumns];
    for (int done = 0; done < n; done += w->nmany) {
        int k = n - done < w->nmany ? n - done : w->nmany;
        for (int j = 0; j < k; j++) {
            ready_values(tenant, rows[done + j], values, nulls);
            set_row(w, w->many[j], values, nulls);
        }
        table_multi_insert(w->rel, w->many, k, cid, 0, nullptr);
        for (int j = 0; j < k; j++) {
            ready_values(tenant, rows[done + j], values, nulls);
            Datum key[4];
            ready_key(values, key);
            index_and_replace(w, w->many[j], key, kReadyProcs, 4);
            ExecClearTuple(w->many[j]);
        }
    }
}

// A probe of the primary key, then the heap delete; by SQL for a table with triggers.
void remove_ready(Writer* w, const pg_uuid_t* tenant, const text* target, std::int32_t priority, std::int64_t id) {
    Datum values[4] = {UUIDPGetDatum(const_cast<pg_uuid_t*>(tenant)), PointerGetDatum(target),
                       Int64GetDatum(rank_of(priority)), Int64GetDatum(id)};
    if (w->by_statement) {
        run_statement(w, "DELETE FROM %s WHERE " READY_KEY_SQL, 4, kReadyTypes, values);
        return;
    }
    Datum key[4];
    ready_key(values, key);
    if (find(w, key, kReadyProcs, 4)) simple_heap_delete(w->rel, &w->found->tts_tid);
}

// The heap delete of the row at tid; by SQL, by its ctid, for a table with triggers.
void remove_ready_at(Writer* w, const ItemPointerData* tid) {
    if (w->by_statement) {
        const Oid types[1] = {TIDOID};
        const Datum values[1] = {PointerGetDatum(tid)};
        run_statement(w, "DELETE FROM %s WHERE ctid OPERATOR(pg_catalog.=) $1", 1, types, values);
        return;
    }
    simple_heap_delete(w->rel, const_cast<ItemPointer>(tid));
}


namespace {
// How many writes of side rows that go with delivery rows are under way (writing()).
int g_writing = 0;
}  // namespace

bool writing() { return g_writing > 0; }
Writing::Writing() { g_writing++; }
Writing::~Writing() { g_writing--; }

// Two INSERT ... SELECT statements, each skipping the rows already there, under
// writing() (kept by PG_FINALLY: an error here is a Postgres one). Leases of any age
// may come in: the reaper looks at every lease until its next full scan.
void fill() {
    launcher::report_early_lease(DT_NOBEGIN);
    const char* const statements[2] = {
        "INSERT INTO baton.leases (tenant, id, generation, lease_until) "
        "SELECT d.tenant, d.id, d.generation, d.lease_until FROM baton.deliveries d "
        "WHERE d.status OPERATOR(pg_catalog.=) 'claimed' AND d.lease_until IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM baton.leases l WHERE l.tenant OPERATOR(pg_catalog.=) d.tenant "
        "AND l.id OPERATOR(pg_catalog.=) d.id AND l.generation OPERATOR(pg_catalog.=) d.generation "
        "AND l.lease_until OPERATOR(pg_catalog.=) d.lease_until)",
        "INSERT INTO baton.ready (tenant, target, rank, id, run_after) "
        "SELECT d.tenant, d.target, OPERATOR(pg_catalog.-) d.priority::pg_catalog.int8, d.id, d.run_after "
        "FROM baton.deliveries d WHERE d.status OPERATOR(pg_catalog.=) 'pending' "
        "AND NOT EXISTS (SELECT 1 FROM baton.ready r WHERE r.tenant OPERATOR(pg_catalog.=) d.tenant "
        "AND r.target OPERATOR(pg_catalog.=) d.target "
        "AND r.rank OPERATOR(pg_catalog.=) (OPERATOR(pg_catalog.-) d.priority::pg_catalog.int8) "
        "AND r.id OPERATOR(pg_catalog.=) d.id)"};
    g_writing++;
    PG_TRY();
    {
        for (const char* sql : statements) {
            int rc = SPI_execute(sql, false, 0);
            if (rc != SPI_OK_INSERT)
                elog(ERROR, "pg_baton could not fill its side tables: %s", SPI_result_code_string(rc));
        }
    }
    PG_FINALLY();
    {
        g_writing--;
    }
    PG_END_TRY();
}

}  // namespace baton::pg::side_rows
