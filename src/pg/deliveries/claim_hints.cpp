// Claim hints in shared memory (see claim_hints.hpp).
#include <cstring>

#include "core/claim_hint.hpp"
#include "core/limits.hpp"
#include "pg/runtime/boundary.hpp"
#include "pg/runtime/cache.hpp"
#include "pg/deliveries/claim_hints.hpp"
#include "pg/runtime/settings.hpp"
#include "pg/runtime/shared_table.hpp"
#include "pg/runtime/spi.hpp"

namespace baton::pg::claim_hints {

namespace {

using claim_hint::Position;

using Key = shared_table::TargetKey;
using shared_table::kMaxTargetBytes;

struct Entry {
    Key key;  // first: the hash table's key
    slock_t mutex;
    bool disabled;  // a prepared transaction wrote it: no hint until none remains (look_at_prepared())
    std::uint64_t prepares;     // prepared transactions that wrote it, ever
    TimestampTz prepared_looked;  // when look_at_prepared() was last asked to look
    TimestampTz last_from_top;  // the last hinted claim that scanned again from the top
    Oid relation;   // the deliveries table (on Citus, its shard) the hint describes
    int target_len;
    char target[kMaxTargetBytes];
    claim_hint::State state;
};

// One entry per (database, tenant, target), never removed.
shared_table::Table g_shared = {"pg_baton claim hints", sizeof(Key), sizeof(Entry), &settings::claim_hint_targets,
                                nullptr, nullptr};

// This backend's entries, found once: entries are never removed or moved, so no
// invalidation touches them. At most kCacheSize: the next new one empties the table.
constexpr long kCacheSize = 1024;
cache::Map<Key, Entry*> g_cache{"pg_baton claim hint entries", kCacheSize, cache::Forgets::kNothing};

// What this transaction did to each entry it touched, for its end.
struct Touch {
    Entry* entry;
    bool lowered;   // in flight: writer_done at the end
    bool taken;     // took pending rows: lower there if it aborts
    Position taken_at;
    TimestampTz taken_run_after;
};
Touch* g_touched = nullptr;  // in TopMemoryContext
int g_ntouched = 0;
int g_touched_size = 0;

// The entry of (database, tenant, target), created if absent; null when the table is
// full or another target shares the 64-bit hash (no hint for it then). Raises no error
// but out of memory, before any shared state changes.
Entry* find(const pg_uuid_t* tenant, const char* target, int len) {
    if (g_shared.table == nullptr || len > kMaxTargetBytes) return nullptr;
    Key key = shared_table::target_key(tenant, target, len);
    Entry* e = nullptr;
    if (Entry* const* kept = g_cache.find(key)) {
        e = *kept;
    } else {
        LWLockAcquire(g_shared.lock, LW_SHARED);
        e = static_cast<Entry*>(hash_search(g_shared.table, &key, HASH_FIND, nullptr));
        LWLockRelease(g_shared.lock);
        if (e == nullptr) {
            LWLockAcquire(g_shared.lock, LW_EXCLUSIVE);
            bool found = false;
            e = static_cast<Entry*>(hash_search(g_shared.table, &key, HASH_ENTER_NULL, &found));
            if (e != nullptr && !found) {
                SpinLockInit(&e->mutex);
                e->disabled = false;
                e->prepares = 0;
                e->prepared_looked = 0;
                e->last_from_top = 0;
                e->relation = InvalidOid;
                e->target_len = len;
                std::memcpy(e->target, target, len);
                claim_hint::reset(e->state);
            }
            LWLockRelease(g_shared.lock);
            if (e == nullptr) return nullptr;
        }
        guard([&key, e] { *g_cache.enter(key) = e; });
    }
    if (e->target_len != len || std::memcmp(e->target, target, len) != 0) return nullptr;
    return e;
}

// This transaction's record for an entry, added if new (allocated before any shared
// state changes, so an out-of-memory error leaves nothing to undo).
Touch* touch(Entry* e) {
    for (int i = 0; i < g_ntouched; i++)
        if (g_touched[i].entry == e) return &g_touched[i];
    if (g_ntouched == g_touched_size) {
        int size = g_touched_size == 0 ? 16 : g_touched_size * 2;
        g_touched = static_cast<Touch*>(guard([size] {
            return g_touched == nullptr ? MemoryContextAlloc(TopMemoryContext, size * sizeof(Touch))
                                        : repalloc(g_touched, size * sizeof(Touch));
        }));
        g_touched_size = size;
    }
    Touch* t = &g_touched[g_ntouched++];
    *t = {e, false, false, claim_hint::kEnd, 0};
    return t;
}

bool delayed(TimestampTz run_after) { return run_after > GetCurrentTimestamp(); }

constexpr TimestampTz kEverySecond = 1000 * 1000;  // microseconds

// Whether a prepared transaction of this database remains.
KeptPlan g_prepared = {
    "SELECT EXISTS (SELECT FROM pg_catalog.pg_prepared_xacts "
    "WHERE database OPERATOR(pg_catalog.=) pg_catalog.current_database())",
    0, {}, nullptr, true};

// Lowers an entry's hint on behalf of this backend, in flight for it until its
// transaction ends (registered at its first lowering of the entry).
void lower(Touch& t, Position at, TimestampTz run_after) {
    bool late = delayed(run_after);
    SpinLockAcquire(&t.entry->mutex);
    claim_hint::lower(t.entry->state, BATON_MY_PROC_NUMBER, t.lowered, at, late, run_after);
    SpinLockRelease(&t.entry->mutex);
    t.lowered = true;
}

// The end of the transaction: rows it took are pending again if it aborted; it is no
// longer in flight anywhere. Touches only shared memory under spinlocks: cannot fail.
void end_of_transaction(bool aborted, bool prepared) {
    for (int i = 0; i < g_ntouched; i++) {
        Touch& t = g_touched[i];
        Entry* e = t.entry;
        bool late = aborted && t.taken && delayed(t.taken_run_after);
        SpinLockAcquire(&e->mutex);
        if (aborted && t.taken) {
            claim_hint::lower(e->state, BATON_MY_PROC_NUMBER, t.lowered, t.taken_at, late, t.taken_run_after);
            t.lowered = true;
        }
        if (prepared) {
            // Its rows become visible, or pending again, at COMMIT/ROLLBACK PREPARED, by
            // another backend and with no callback here: this target gets no more hints.
            e->disabled = true;
            e->prepares++;
            e->state.hint = claim_hint::kTop;
        }
        if (t.lowered) claim_hint::writer_done(e->state, BATON_MY_PROC_NUMBER);
        SpinLockRelease(&e->mutex);
    }
    g_ntouched = 0;
}

void on_xact(XactEvent event, void*) {
    switch (event) {
        case XACT_EVENT_COMMIT:
        case XACT_EVENT_PARALLEL_COMMIT:
            end_of_transaction(false, false);
            break;
        case XACT_EVENT_ABORT:
        case XACT_EVENT_PARALLEL_ABORT:
            end_of_transaction(true, false);
            break;
        case XACT_EVENT_PREPARE:
            end_of_transaction(false, true);
            break;
        default:
            break;
    }
}

// A subtransaction that aborts puts the rows it took back: lower there now (the rows
// are visible as pending from this moment). Rows taken before it are lowered too, which
// is merely early.
void on_subxact(SubXactEvent event, SubTransactionId, SubTransactionId, void*) {
    if (event != SUBXACT_EVENT_ABORT_SUB) return;
    for (int i = 0; i < g_ntouched; i++) {
        Touch& t = g_touched[i];
        if (t.taken) lower(t, t.taken_at, t.taken_run_after);
    }
}

}  // namespace

void init() {
    // The shared memory exists only when preloaded (baton.claim_hint_targets, read by
    // settings::define() before this, exists only then).
    shared_table::reserve(&g_shared);
    RegisterXactCallback(on_xact, nullptr);
    RegisterSubXactCallback(on_subxact, nullptr);
}

bool enabled() { return g_shared.table != nullptr; }

Scan begin(const pg_uuid_t* tenant, const char* target, int target_len, bool use_hint, Oid relation) {
    Scan scan{nullptr, {claim_hint::kTop, 0, claim_hint::kEnd, claim_hint::kEnd, 0}, 0, nullptr, 0};
    TimestampTz now = GetCurrentTimestamp();
    Entry* e = use_hint ? find(tenant, target, target_len) : nullptr;
    if (e != nullptr) {
        SpinLockAcquire(&e->mutex);
        if (e->relation != relation) {
            claim_hint::forget(e->state);
            e->relation = relation;
        }
        if (!e->disabled) {
            scan.ticket = claim_hint::begin(e->state);
            scan.entry = e;
        } else if (now - e->prepared_looked >= kEverySecond) {
            e->prepared_looked = now;
            scan.disabled = e;
            scan.prepares = e->prepares;
        }
        SpinLockRelease(&e->mutex);
    }
    // Read after the ticket: a row made pending before it was due by now (claim_hint.hpp).
    scan.now = e != nullptr ? GetCurrentTimestamp() : now;
    return scan;
}

bool may_scan_from_top(const Scan& scan) {
    Entry* e = static_cast<Entry*>(scan.entry);
    if (e == nullptr) return true;
    SpinLockAcquire(&e->mutex);
    bool may = scan.now - e->last_from_top >= kEverySecond;
    if (may) e->last_from_top = scan.now;
    SpinLockRelease(&e->mutex);
    return may;
}

void look_at_prepared(const Scan& scan) {
    Entry* e = static_cast<Entry*>(scan.disabled);
    if (e == nullptr) return;
    bool remains;
    {
        Spi spi;
        spi.run(g_prepared, nullptr, nullptr);
        remains = spi.bool_at(0, 1);
    }
    if (remains) return;
    // Unless another transaction prepared since begin(): its rows may be unseen yet.
    SpinLockAcquire(&e->mutex);
    if (e->disabled && e->prepares == scan.prepares) {
        claim_hint::forget(e->state);
        e->disabled = false;
    }
    SpinLockRelease(&e->mutex);
}

void raise(const Scan& scan, Position last) {
    Entry* e = static_cast<Entry*>(scan.entry);
    // Under REPEATABLE READ or SERIALIZABLE the scan used the transaction's snapshot,
    // older than the ticket: it may have passed rows committed before the ticket that no
    // writer in flight accounts for. Such a claim uses the hint but never moves it.
    if (e == nullptr || IsolationUsesXactSnapshot()) return;
    SpinLockAcquire(&e->mutex);
    if (!e->disabled) claim_hint::raise(e->state, scan.ticket, last, scan.now);
    SpinLockRelease(&e->mutex);
}

void row_pending(const pg_uuid_t* tenant, const char* target, int target_len, Position at,
                 TimestampTz run_after) {
    if (g_shared.table == nullptr) return;
    Entry* e = find(tenant, target, target_len);
    if (e == nullptr) return;
    lower(*touch(e), at, run_after);
}

void row_taken(const pg_uuid_t* tenant, const char* target, int target_len, Position at,
               TimestampTz run_after) {
    if (g_shared.table == nullptr) return;
    Entry* e = find(tenant, target, target_len);
    if (e == nullptr) return;
    Touch* t = touch(e);
    t->taken = true;
    t->taken_at = claim_hint::earliest(t->taken_at, at);
    if (run_after > t->taken_run_after) t->taken_run_after = run_after;
}

}  // namespace baton::pg::claim_hints
