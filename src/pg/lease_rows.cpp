// The rows of baton.leases (see lease_rows.hpp).
#include <cstring>

#include "pg/lease_rows.hpp"
#include "pg/relations.hpp"

namespace baton::pg::lease_rows {

namespace {

// The columns of baton.leases, found by name once per backend (relations::attnums).
enum Column { kTenant, kId, kGeneration, kLeaseUntil, kColumns };
const char* const kColumnNames[kColumns] = {"tenant", "id", "generation", "lease_until"};

// The shards of baton.leases found for shards of baton.deliveries, per backend: a shard
// keeps its oid until Citus moves or splits it (a new relation, a relcache
// invalidation: forget()).
constexpr int kShards = 64;
struct ShardPair {
    Oid deliveries;
    Oid leases;
};
ShardPair g_shards[kShards];
int g_nshards = 0;

// The shard of baton.leases colocated with `shard`, a shard of baton.deliveries named
// deliveries_<shard id>: the shard of baton.leases with the same hash range, from
// Citus' metadata, which every node of a distributed install holds.
Oid colocated_leases(Relation shard) {
    Oid relid = RelationGetRelid(shard);
    for (int i = 0; i < g_nshards; i++)
        if (g_shards[i].deliveries == relid) return g_shards[i].leases;
    const char* name = RelationGetRelationName(shard);
    const char* underscore = std::strrchr(name, '_');
    int64 shardid = underscore != nullptr ? pg_strtoint64(underscore + 1) : 0;
    Oid leases = InvalidOid;
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_baton could not connect to SPI");
    Oid types[1] = {INT8OID};
    Datum values[1] = {Int64GetDatum(shardid)};
    int rc = SPI_execute_with_args(
        "SELECT pg_catalog.to_regclass(pg_catalog.shard_name(l.logicalrelid, l.shardid))::pg_catalog.oid "
        "FROM pg_catalog.pg_dist_shard s JOIN pg_catalog.pg_dist_shard l "
        "ON l.logicalrelid OPERATOR(pg_catalog.=) 'baton.leases'::pg_catalog.regclass "
        "AND l.shardminvalue OPERATOR(pg_catalog.=) s.shardminvalue "
        "WHERE s.shardid OPERATOR(pg_catalog.=) $1",
        1, types, values, nullptr, true, 1);
    if (rc == SPI_OK_SELECT && SPI_processed == 1) {
        bool isnull = false;
        Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
        if (!isnull) leases = DatumGetObjectId(d);
    }
    SPI_finish();
    if (!OidIsValid(leases))
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("pg_baton cannot find the shard of baton.leases that goes with shard %s", name),
                        errhint("Run SELECT baton.distribute() on the coordinator after ALTER EXTENSION pg_baton "
                                "UPDATE.")));
    if (g_nshards == kShards) g_nshards = 0;  // a full cache starts again
    g_shards[g_nshards++] = {relid, leases};
    return leases;
}

}  // namespace

// The relation and what an insert into it needs: its indexes, a slot, an executor state,
// and the probe of its primary key (begun on first use).
struct Writer {
    Relation rel;
    EState* estate;
    ResultRelInfo* rri;
    TupleTableSlot* slot;
    Relation pkey;
    IndexScanDesc probe;
    TupleTableSlot* found;
    SnapshotData dirty;
    AttrNumber col[kColumns];
};

bool kept() { return OidIsValid(relations::relid("leases")); }

// baton.leases itself next to baton.deliveries; on Citus the colocated shard.
Writer* open(Relation deliveries) {
    if (!kept()) return nullptr;
    Oid relid = RelationGetRelid(deliveries) == relations::relid("deliveries") ? relations::relid("leases")
                                                                               : colocated_leases(deliveries);
    Writer* w = static_cast<Writer*>(palloc0(sizeof(Writer)));
    w->rel = table_open(relid, RowExclusiveLock);
    const AttrNumber* cols = relations::attnums(w->rel, kColumnNames, kColumns);
    for (int c = 0; c < kColumns; c++) {
        w->col[c] = cols[c];
        if (w->col[c] == 0) elog(ERROR, "pg_baton cannot find column baton.leases.%s", kColumnNames[c]);
    }
    w->estate = CreateExecutorState();
    w->rri = makeNode(ResultRelInfo);
    InitResultRelInfo(w->rri, w->rel, 0, nullptr, 0);
    ExecOpenIndices(w->rri, false);
    w->slot = MakeSingleTupleTableSlot(RelationGetDescr(w->rel), &TTSOpsVirtual);
    for (int i = 0; i < w->rri->ri_NumIndices; i++)
        if (w->rri->ri_IndexRelationDescs[i]->rd_index->indisprimary) w->pkey = w->rri->ri_IndexRelationDescs[i];
    if (w->pkey == nullptr) elog(ERROR, "pg_baton cannot find the primary key of baton.leases");
    return w;
}

namespace {

// True when the row (lease_until, tenant, id, generation) is in the table already, seen
// by a dirty snapshot (committed or not): the same lease written twice, which the
// primary key would refuse (a renew back to an earlier lease_until of the same
// generation, inside the transaction that wrote it).
bool present(Writer* w, const Datum* values) {
    if (w->probe == nullptr) {
        InitDirtySnapshot(w->dirty);
        w->probe = index_beginscan(w->rel, w->pkey, &w->dirty, 4, 0);
        w->found = table_slot_create(w->rel, nullptr);
    }
    // leases_pkey is (lease_until, tenant, id, generation).
    ScanKeyData keys[4];
    ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_TIMESTAMPTZ_EQ, values[kLeaseUntil]);
    ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_UUID_EQ, values[kTenant]);
    ScanKeyInit(&keys[2], 3, BTEqualStrategyNumber, F_INT8EQ, values[kId]);
    ScanKeyInit(&keys[3], 4, BTEqualStrategyNumber, F_INT8EQ, values[kGeneration]);
    index_rescan(w->probe, keys, 4, nullptr, 0);
    return index_getnext_slot(w->probe, ForwardScanDirection, w->found);
}

}  // namespace

// A heap insert and its index entries, as an INSERT writes them (the table has no
// constraint but NOT NULL, which these values keep, and its primary key), unless the row
// is there already.
void add(Writer* w, const pg_uuid_t* tenant, std::int64_t id, std::int64_t generation, TimestampTz lease_until) {
    Datum values[kColumns] = {UUIDPGetDatum(const_cast<pg_uuid_t*>(tenant)), Int64GetDatum(id),
                              Int64GetDatum(generation), TimestampTzGetDatum(lease_until)};
    if (present(w, values)) return;
    TupleTableSlot* slot = w->slot;
    ExecClearTuple(slot);
    int natts = RelationGetDescr(w->rel)->natts;
    for (int i = 0; i < natts; i++) {
        slot->tts_values[i] = 0;
        slot->tts_isnull[i] = true;
    }
    for (int c = 0; c < kColumns; c++) {
        slot->tts_values[w->col[c] - 1] = values[c];
        slot->tts_isnull[w->col[c] - 1] = false;
    }
    ExecStoreVirtualTuple(slot);
    table_tuple_insert(w->rel, slot, GetCurrentCommandId(true), 0, nullptr);
    if (w->rri->ri_NumIndices > 0) compat::insert_new_index_tuples(w->rri, slot, w->estate);
    ResetPerTupleExprContext(w->estate);
}

void close(Writer* w) {
    if (w->probe != nullptr) {
        index_endscan(w->probe);
        ExecDropSingleTupleTableSlot(w->found);
    }
    ExecDropSingleTupleTableSlot(w->slot);
    ExecCloseIndices(w->rri);
    FreeExecutorState(w->estate);
    table_close(w->rel, NoLock);
    pfree(w);
}

void fill() {
    int rc = SPI_execute(
        "INSERT INTO baton.leases (tenant, id, generation, lease_until) "
        "SELECT d.tenant, d.id, d.generation, d.lease_until FROM baton.deliveries d "
        "WHERE d.status OPERATOR(pg_catalog.=) 'claimed' AND d.lease_until IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM baton.leases l WHERE l.tenant OPERATOR(pg_catalog.=) d.tenant "
        "AND l.id OPERATOR(pg_catalog.=) d.id AND l.generation OPERATOR(pg_catalog.=) d.generation "
        "AND l.lease_until OPERATOR(pg_catalog.=) d.lease_until)",
        false, 0);
    if (rc != SPI_OK_INSERT) elog(ERROR, "pg_baton could not fill baton.leases: %s", SPI_result_code_string(rc));
}

void forget(Oid relid) {
    if (relid == InvalidOid) {
        g_nshards = 0;
        return;
    }
    for (int i = 0; i < g_nshards; i++)
        if (g_shards[i].deliveries == relid || g_shards[i].leases == relid) g_shards[i] = g_shards[--g_nshards], i--;
}

}  // namespace baton::pg::lease_rows
