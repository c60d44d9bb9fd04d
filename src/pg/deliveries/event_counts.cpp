// The monotonic counters of deliveries (see event_counts.hpp).
#include <cstring>

#include "core/event_count.hpp"
#include "core/limits.hpp"
#include "pg/access/fence.hpp"
#include "pg/deliveries/event_counts.hpp"
#include "pg/runtime/compat.hpp"
#include "pg/runtime/owner.hpp"
#include "pg/runtime/settings.hpp"
#include "pg/runtime/shared_table.hpp"

namespace baton::pg::event_counts {

namespace {

using event_count::kEvents;

using Key = shared_table::TargetKey;
using shared_table::kMaxTargetBytes;

// The counts of (database, tenant, target) not yet in baton.event_counts.
struct Entry {
    Key key;  // first: the hash table's key
    int target_len;
    char target[kMaxTargetBytes];
    pg_atomic_uint64 n[kEvents];
};

// Its lock: shared to add to an entry, exclusive to make or remove one.
shared_table::Table g_shared = {"pg_baton event counts", sizeof(Key), sizeof(Entry), &settings::counted_targets,
                                nullptr, nullptr};

// Counts of one (tenant, target): a transaction's, or a flush's.
struct Counts {
    SubTransactionId subxid;
    pg_uuid_t tenant;
    text* target;
    int64 n[kEvents];
};

// This transaction's counts, in TopTransactionContext (nullptr: none yet).
Counts* g_counts = nullptr;
int g_ncounts = 0;
int g_size = 0;
// What this transaction's flush took out of shared memory, to put back if it aborts.
Counts* g_flushed = nullptr;
int g_nflushed = 0;
bool g_reaping = false;
bool g_speculative = false;
bool g_restoring = false;

void forget() {
    g_counts = nullptr;
    g_ncounts = g_size = 0;
    g_flushed = nullptr;
    g_nflushed = 0;
}

bool same_target(const text* a, const pg_uuid_t* tenant, const text* target, const pg_uuid_t* a_tenant) {
    return std::memcmp(a_tenant, tenant, sizeof *tenant) == 0 && VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(target) &&
           std::memcmp(VARDATA_ANY(a), VARDATA_ANY(target), VARSIZE_ANY_EXHDR(a)) == 0;
}

// This (sub)transaction's counts of (tenant, target), added if new.
Counts* counts_of(const pg_uuid_t* tenant, const text* target) {
    SubTransactionId subxid = GetCurrentSubTransactionId();
    for (int i = g_ncounts - 1; i >= 0; i--) {
        Counts& c = g_counts[i];
        if (c.subxid == subxid && same_target(c.target, tenant, target, &c.tenant)) return &c;
    }
    MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
    if (g_ncounts == g_size) {
        int size = g_size == 0 ? 8 : g_size * 2;
        g_counts = static_cast<Counts*>(g_counts == nullptr ? palloc(sizeof(Counts) * size)
                                                            : repalloc(g_counts, sizeof(Counts) * size));
        g_size = size;
    }
    Counts& c = g_counts[g_ncounts];
    std::memset(&c, 0, sizeof c);
    c.subxid = subxid;
    c.tenant = *tenant;
    c.target = static_cast<text*>(PG_DETOAST_DATUM_COPY(PointerGetDatum(const_cast<text*>(target))));
    MemoryContextSwitchTo(old);
    return &g_counts[g_ncounts++];
}

bool entry_is(const Entry* e, const text* target) {
    return e->target_len == static_cast<int>(VARSIZE_ANY_EXHDR(target)) &&
           std::memcmp(e->target, VARDATA_ANY(target), e->target_len) == 0;
}

// Adds c's counts to the shared entry of its (tenant, target), made if absent. False
// when there is no room for it (the table is full, or another target has its hash).
bool add_shared(const Counts& c) {
    int len = static_cast<int>(VARSIZE_ANY_EXHDR(c.target));
    if (len > kMaxTargetBytes) return false;
    Key key = shared_table::target_key(&c.tenant, VARDATA_ANY(c.target), len);
    LWLockAcquire(g_shared.lock, LW_SHARED);
    Entry* e = static_cast<Entry*>(hash_search(g_shared.table, &key, HASH_FIND, nullptr));
    if (e == nullptr) {
        LWLockRelease(g_shared.lock);
        LWLockAcquire(g_shared.lock, LW_EXCLUSIVE);
        bool found = false;
        e = static_cast<Entry*>(hash_search(g_shared.table, &key, HASH_ENTER_NULL, &found));
        if (e != nullptr && !found) {
            e->target_len = len;
            std::memcpy(e->target, VARDATA_ANY(c.target), len);
            for (int i = 0; i < kEvents; i++) pg_atomic_init_u64(&e->n[i], 0);
        }
    }
    bool added = e != nullptr && entry_is(e, c.target);
    if (added)
        for (int i = 0; i < kEvents; i++)
            if (c.n[i] != 0) pg_atomic_fetch_add_u64(&e->n[i], static_cast<uint64>(c.n[i]));
    LWLockRelease(g_shared.lock);  // the shared entry is removed only under the exclusive lock
    return added;
}

// Adds counts into baton.event_counts (part `part` of each (tenant, target)).
const char* const kUpsert =
    "INSERT INTO baton.event_counts AS c (tenant, target, part, enqueued, claimed, finished, failed, retried, "
    "cancelled, reaped, redriven) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) "
    "ON CONFLICT (tenant, target, part) DO UPDATE SET "
    "enqueued = c.enqueued OPERATOR(pg_catalog.+) EXCLUDED.enqueued, "
    "claimed = c.claimed OPERATOR(pg_catalog.+) EXCLUDED.claimed, "
    "finished = c.finished OPERATOR(pg_catalog.+) EXCLUDED.finished, "
    "failed = c.failed OPERATOR(pg_catalog.+) EXCLUDED.failed, "
    "retried = c.retried OPERATOR(pg_catalog.+) EXCLUDED.retried, "
    "cancelled = c.cancelled OPERATOR(pg_catalog.+) EXCLUDED.cancelled, "
    "reaped = c.reaped OPERATOR(pg_catalog.+) EXCLUDED.reaped, "
    "redriven = c.redriven OPERATOR(pg_catalog.+) EXCLUDED.redriven";
SPIPlanPtr g_upsert = nullptr;

// Writes c into baton.event_counts (inside an SPI connection).
void upsert(const Counts& c, int part) {
    if (g_upsert == nullptr) {
        Oid types[11] = {UUIDOID, TEXTOID, INT4OID, INT8OID, INT8OID, INT8OID, INT8OID,
                         INT8OID, INT8OID, INT8OID, INT8OID};
        SPIPlanPtr plan = SPI_prepare(kUpsert, 11, types);
        if (plan == nullptr) elog(ERROR, "pg_baton could not prepare a statement: %s", SPI_result_code_string(SPI_result));
        if (SPI_keepplan(plan) != 0) elog(ERROR, "pg_baton could not keep a prepared statement");
        g_upsert = plan;
    }
    Datum values[11] = {UUIDPGetDatum(const_cast<pg_uuid_t*>(&c.tenant)), PointerGetDatum(c.target),
                        Int32GetDatum(part)};
    for (int i = 0; i < kEvents; i++) values[3 + i] = Int64GetDatum(c.n[i]);
    int rc = SPI_execute_plan(g_upsert, values, nullptr, false, 0);
    if (rc < 0) elog(ERROR, "pg_baton could not write baton.event_counts: %s", SPI_result_code_string(rc));
}

// Runs body inside an SPI connection as the extension's owner (who alone may write
// baton.event_counts), on a snapshot of its own: outside any call, at a commit.
template <typename F>
void as_owner(F body) {
    Oid saved_user = InvalidOid;
    int saved_context = 0;
    GetUserIdAndSecContext(&saved_user, &saved_context);
    SetUserIdAndSecContext(owner::of_extension(), saved_context | SECURITY_LOCAL_USERID_CHANGE);
    PushActiveSnapshot(GetTransactionSnapshot());
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_baton could not connect to SPI");
    body();
    SPI_finish();
    PopActiveSnapshot();
    SetUserIdAndSecContext(saved_user, saved_context);
}

bool has_table() {
    Oid ns = get_namespace_oid("baton", true);
    return OidIsValid(ns) && OidIsValid(get_relname_relid("event_counts", ns));
}

// At the commit: the transaction's counts, summed per (tenant, target), into shared
// memory, or else into baton.event_counts.
void commit_counts() {
    if (g_ncounts == 0) return;
    // Sums per (tenant, target) into the first Counts of each.
    int n = 0;
    for (int i = 0; i < g_ncounts; i++) {
        int j = 0;
        while (j < n && !same_target(g_counts[j].target, &g_counts[i].tenant, g_counts[i].target, &g_counts[j].tenant))
            j++;
        if (j == n) {
            g_counts[n++] = g_counts[i];
        } else {
            for (int k = 0; k < kEvents; k++) g_counts[j].n[k] += g_counts[i].n[k];
        }
    }
    g_ncounts = 0;
    bool shared = g_shared.table != nullptr;
    int written = 0;
    for (int i = 0; i < n; i++) {
        if (shared && add_shared(g_counts[i])) continue;
        g_counts[written++] = g_counts[i];
    }
    if (written == 0 || !has_table()) return;
    int part = BATON_MY_PROC_NUMBER % kParts;
    as_owner([written, part] {
        for (int i = 0; i < written; i++) upsert(g_counts[i], part);
    });
}

void on_xact(XactEvent event, void*) {
    switch (event) {
        case XACT_EVENT_PRE_COMMIT:
        case XACT_EVENT_PARALLEL_PRE_COMMIT:
        case XACT_EVENT_PRE_PREPARE: commit_counts(); break;
        case XACT_EVENT_ABORT:
        case XACT_EVENT_PARALLEL_ABORT:
            // A flush that did not commit gives its counts back.
            for (int i = 0; i < g_nflushed; i++)
                if (!add_shared(g_flushed[i]))
                    elog(WARNING, "pg_baton lost event counts of a flush that aborted: the shared table is full");
            forget();
            break;
        case XACT_EVENT_COMMIT:
        case XACT_EVENT_PARALLEL_COMMIT:
        case XACT_EVENT_PREPARE: forget(); break;
        default: break;
    }
}

void on_subxact(SubXactEvent event, SubTransactionId subxid, SubTransactionId, void*) {
    if (event != SUBXACT_EVENT_ABORT_SUB) return;
    int kept = 0;
    for (int i = 0; i < g_ncounts; i++)
        if (g_counts[i].subxid < subxid) g_counts[kept++] = g_counts[i];
    g_ncounts = kept;
}

}  // namespace

void init() {
    // The shared table exists only when preloaded (baton.counted_targets, read by
    // settings::define() before this, exists only then).
    shared_table::reserve(&g_shared);
    RegisterXactCallback(on_xact, nullptr);
    RegisterSubXactCallback(on_subxact, nullptr);
}

void wrote(const pg_uuid_t* tenant, const text* target, std::optional<delivery::Status> before,
           std::optional<delivery::Status> after) {
    if (!settings::count_events || g_restoring || tenant == nullptr || target == nullptr) return;
    if (g_speculative && !before) return;
    event_count::Counted c = event_count::of(before, after, g_reaping);
    if (c.n == 0) return;
    Counts* counts = counts_of(tenant, target);
    for (int i = 0; i < c.n; i++) counts->n[static_cast<int>(c.events[i])]++;
}

void enqueued(const pg_uuid_t* tenant, const text* target, int n) {
    if (!settings::count_events || n <= 0) return;
    counts_of(tenant, target)->n[static_cast<int>(event_count::Event::kEnqueued)] += n;
}

void set_reaping(bool on) { g_reaping = on; }

void set_inserting_speculatively(bool on) { g_speculative = on; }

void set_restoring(bool on) { g_restoring = on; }

namespace {

// What a flush took out of shared memory: this database's non-zero counts, noted to be
// given back should the transaction abort (g_flushed from `first`).
struct Taken {
    Counts* counts;
    int n;
    int first;
};

// Notes counts taken by a flush, to give back should the transaction abort. Postgres
// calls only.
void note_flushed(const Counts& c) {
    if (g_nflushed % 16 == 0) {
        std::size_t bytes = sizeof(Counts) * (g_nflushed + 16);
        g_flushed = static_cast<Counts*>(g_flushed == nullptr ? MemoryContextAlloc(TopTransactionContext, bytes)
                                                              : repalloc(g_flushed, bytes));
    }
    g_flushed[g_nflushed++] = c;
}

// Takes this database's counts out of shared memory, removing the entries left empty.
// Postgres calls only.
Taken take() {
    LWLockAcquire(g_shared.lock, LW_EXCLUSIVE);
    long size = hash_get_num_entries(g_shared.table);
    Taken t{static_cast<Counts*>(MemoryContextAllocZero(TopTransactionContext, sizeof(Counts) * (size + 1))), 0,
            g_nflushed};
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, g_shared.table);
    while (Entry* e = static_cast<Entry*>(hash_seq_search(&scan))) {
        if (e->key.db != MyDatabaseId) continue;
        Counts& c = t.counts[t.n];
        bool any = false;
        for (int i = 0; i < kEvents; i++) {
            c.n[i] = static_cast<int64>(pg_atomic_exchange_u64(&e->n[i], 0));
            any = any || c.n[i] != 0;
        }
        if (!any) {
            (void)hash_search(g_shared.table, &e->key, HASH_REMOVE, nullptr);  // allowed during a scan
            continue;
        }
        c.tenant = e->key.tenant;
        c.target = static_cast<text*>(MemoryContextAlloc(TopTransactionContext, VARHDRSZ + e->target_len));
        SET_VARSIZE(c.target, VARHDRSZ + e->target_len);
        std::memcpy(VARDATA(c.target), e->target, e->target_len);
        note_flushed(c);
        t.n++;
    }
    LWLockRelease(g_shared.lock);
    return t;
}

}  // namespace

std::int64_t flush() {
    if (g_shared.table == nullptr) return 0;
    Taken t = guard([] { return take(); });
    // A tenant that is not active (or whose fence is changing) accepts no write: its
    // counts go back, for a later round.
    std::int64_t written = 0;
    for (int i = 0; i < t.n; i++) {
        const Counts& c = t.counts[i];
        if (fence::try_writable(&c.tenant)) {
            guard([&c] { upsert(c, 0); });
            written++;
            continue;
        }
        guard([&c, &t, i] {
            std::memset(g_flushed[t.first + i].n, 0, sizeof c.n);  // not taken after all
            if (!add_shared(c))
                elog(WARNING, "pg_baton lost the event counts of a tenant that is not active: no room in shared "
                              "memory (baton.counted_targets)");
        });
    }
    return written;
}

}  // namespace baton::pg::event_counts
