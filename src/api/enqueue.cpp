// enqueue and enqueue_batch: new pending deliveries, idempotent on (tenant, target,
// dedup_key), with a batch's JSON items read and checked before the first write.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/limits.hpp"
#include "core/tenant.hpp"
#include "pg/runtime/args.hpp"
#include "pg/citus/citus.hpp"
#include "pg/deliveries/delivery_batch.hpp"
#include "pg/deliveries/delivery_store.hpp"
#include "pg/access/fence.hpp"
#include "pg/runtime/notify.hpp"
#include "pg/access/read_only.hpp"
#include "pg/runtime/spi.hpp"

namespace baton::api {

namespace {

// Refuses (22023) an item outside the documented limits.
void check_item(const pg::NewDelivery& item) {
    delivery::check_target_chars(pg::text_chars(item.target));
    delivery::check_dedup_key_chars(pg::text_chars(item.dedup_key));
    pg::check_object_argument("payload", item.payload);
    pg::check_binding(item.binding);
    if (item.has_run_after && TIMESTAMP_NOT_FINITE(item.run_after))
        throw_invalid_argument("run_after", "run_after is a finite timestamp, or NULL for now.");
    delivery::check_max_attempts(item.max_attempts);
    if (item.key != nullptr) delivery::check_key_chars(pg::text_chars(item.key));
}

struct Enqueued {
    std::int64_t id;
    bool inserted;
};

// What an enqueue of the item returns once its insert attempt met `added`: the new id,
// or the id of the delivery that holds the key when it carries the same payload and
// binding (nothing changes); different ones are DU009. nullopt when the key's row vanished.
std::optional<Enqueued> enqueued(pg_uuid_t* tenant, const pg::NewDelivery& item, const pg::Added& added) {
    if (added.outcome == pg::Added::kInserted) return Enqueued{added.id, true};
    if (added.outcome == pg::Added::kNeither) return std::nullopt;
    if (!added.same)
        throw Error(SqlState::kDedupConflict,
                    "dedup key " + pg::quoted(item.dedup_key) + " of target " + pg::quoted(item.target) +
                        " is already used with another payload, binding or key in tenant " + pg::uuid_text(tenant),
                    "An enqueue repeated with the same dedup key must carry the same payload, binding and key.",
                    "Use a new dedup key for different work.");
    return Enqueued{added.id, false};
}

// Inserts the item, or finds the delivery its key already names (enqueued()); a run_id
// that names no run of the tenant is DU008. The fence has been checked by the caller.
Enqueued enqueue_item(pg::DeliveryStore& store, pg_uuid_t* tenant, const pg::NewDelivery& item) {
    if (item.run_id != nullptr && !store.run_exists(tenant, item.run_id))
        throw Error(SqlState::kNotFound,
                    "run " + pg::uuid_text(item.run_id) + " does not exist in tenant " + pg::uuid_text(tenant),
                    "A delivery's run_id names a run of the same tenant.");
    // A concurrent producer's row can vanish between the insert and the look-up only if
    // it is removed at that moment; then the insert is tried once more.
    for (int tries = 0; tries < 3; tries++) {
        pg::Added added = store.add(tenant, item);
        if (added.outcome == pg::Added::kInserted) pg::notify::enqueued(tenant, item.target);
        if (std::optional<Enqueued> e = enqueued(tenant, item, added)) return *e;
    }
    throw Error(SqlState::kInternal, "enqueue could neither insert nor find its delivery with dedup key " +
                                         pg::quoted(item.dedup_key) + " of target " + pg::quoted(item.target));
}

// The arguments (payload, binding, run_after, priority, max_attempts, run_id) from
// argument `first` on, as enqueue and enqueue_keyed take them.
void read_rest(FunctionCallInfo fcinfo, int first, pg::NewDelivery& item) {
    item.payload = pg::jsonb_arg(fcinfo, first, "payload");
    item.binding = pg::jsonb_arg(fcinfo, first + 1, "binding");
    item.has_run_after = !PG_ARGISNULL(first + 2);
    item.run_after = item.has_run_after ? PG_GETARG_TIMESTAMPTZ(first + 2) : 0;
    item.priority = pg::int32_arg(fcinfo, first + 3, "priority");
    item.max_attempts = pg::int32_arg(fcinfo, first + 4, "max_attempts");
    item.run_id = PG_ARGISNULL(first + 5) ? nullptr : PG_GETARG_UUID_P(first + 5);
}

// baton.enqueue(tenant, target, dedup_key, payload, binding, run_after, priority,
// max_attempts, run_id): adds a pending delivery, idempotent on (tenant, target,
// dedup_key); returns its id.
Datum enqueue(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.enqueue");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    pg::NewDelivery item{};
    item.target = pg::text_arg(fcinfo, 1, "target");
    item.dedup_key = pg::text_arg(fcinfo, 2, "dedup_key");
    read_rest(fcinfo, 3, item);
    check_item(item);
    pg::fence::require_writable(tenant);
    pg::DeliveryStore store;
    PG_RETURN_INT64(enqueue_item(store, tenant, item).id);
}

// baton.enqueue_keyed(tenant, target, dedup_key, key, payload, binding, run_after,
// priority, max_attempts, run_id): enqueue with a key, which the key's limit counts
// (pg/deliveries/key_admission.hpp).
Datum enqueue_keyed(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.enqueue_keyed");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    pg::NewDelivery item{};
    item.target = pg::text_arg(fcinfo, 1, "target");
    item.dedup_key = pg::text_arg(fcinfo, 2, "dedup_key");
    item.key = pg::text_arg(fcinfo, 3, "key");
    read_rest(fcinfo, 4, item);
    check_item(item);
    pg::fence::require_writable(tenant);
    pg::DeliveryStore store;
    PG_RETURN_INT64(enqueue_item(store, tenant, item).id);
}

// enqueue_item() for every item, in order, each with its number in an error's detail,
// into the result: a statement per item. For a batch that fails with DU009, and on
// Citus for one whose key a concurrent producer took.
void enqueue_each(pg::DeliveryStore& store, pg_uuid_t* tenant, const pg::NewDelivery* items, int n,
                  ReturnSetInfo* rsinfo) {
    for (int i = 0; i < n; i++) {
        Enqueued e;
        try {
            e = enqueue_item(store, tenant, items[i]);
        } catch (const Error& err) {
            throw Error(err.state(), err.message(), "Item " + std::to_string(i) + ": " + err.detail(), err.hint());
        }
        Datum values[2] = {Int64GetDatum(e.id), BoolGetDatum(e.inserted)};
        bool nulls[2] = {false, false};
        pg::put_row(rsinfo, values, nulls);
    }
}

// The items [0, n) whose keys an earlier item of the batch uses: repeat[j] is that
// earlier item's index, -1 for the first use of a key.
int* repeats(const pg::NewDelivery* items, int n) {
    int* repeat = pg::guard([n] { return static_cast<int*>(palloc(sizeof(int) * (n + 1))); });
    std::unordered_map<std::string, int> first;
    first.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; i++) {
        std::string key(pg::text_view(items[i].target));
        key.push_back('\0');
        key.append(pg::text_view(items[i].dedup_key));
        auto [at, fresh] = first.emplace(std::move(key), i);
        repeat[i] = fresh ? -1 : at->second;
    }
    return repeat;
}

// True when two jsonb values are equal (jsonb's =).
bool same_json(Jsonb* a, Jsonb* b) {
    return pg::guard([a, b] { return DatumGetBool(DirectFunctionCall2(jsonb_eq, JsonbPGetDatum(a), JsonbPGetDatum(b))); });
}

// baton.enqueue_batch(tenant, items): enqueues every item of a JSON array, all or
// nothing; returns (id, inserted) per item in order, as a call per item would.
//
// Set-based, on one node and on Citus alike, for the items before the first whose run_id
// names no run (DU008, raised at that item by enqueue_item()); each item of a batch that
// succeeds uses one id of the table's sequence, as a call per item did (a batch that
// fails has spent the ids it took, as a failed statement has). When no two of them share
// a key, they are inserted by one statement at once (DeliveryStore::add_all), which a
// key found taken rolls back. Else, or then, they are looked up by key in one statement:
// an item whose key is taken returns that row's id, one whose key an earlier item uses
// returns that item's id. If any of them carries another payload or binding (DU009), the
// batch goes item by item (enqueue_each) and fails where a call per item would; else the
// rest are inserted by one statement. On Citus a key taken meanwhile by a concurrent
// producer sends the batch item by item too.
Datum enqueue_batch(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.enqueue_batch");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    Jsonb* items = pg::jsonb_arg(fcinfo, 1, "items");
    int n = pg::batch_length(items);
    if (n > limits::kMaxBatchItems)
        throw_invalid_argument("items", "A batch has at most " + std::to_string(limits::kMaxBatchItems) +
                                            " items; this one has " + std::to_string(n) + ".");
    // Read and check every item before the first write.
    pg::NewDelivery* parsed =
        pg::guard([n] { return static_cast<pg::NewDelivery*>(palloc0(sizeof(pg::NewDelivery) * (n + 1))); });
    for (int i = 0; i < n; i++) {
        try {
            parsed[i] = pg::batch_item(items, i);
            check_item(parsed[i]);
        } catch (const Error& e) {
            throw Error(e.state(), e.message(), "Item " + std::to_string(i) + ": " + e.detail(), e.hint());
        }
    }
    pg::fence::require_writable(tenant);
    ReturnSetInfo* rsinfo = pg::materialize(fcinfo);
    pg::DeliveryStore store;
    // Items with a key go one statement each, through the row's trigger that admits them
    // under their key's limit in order (pg/deliveries/key_admission.hpp).
    if (std::any_of(parsed, parsed + n, [](const pg::NewDelivery& d) { return d.key != nullptr; })) {
        enqueue_each(store, tenant, parsed, n, rsinfo);
        return static_cast<Datum>(0);
    }
    int with_runs = store.first_missing_run(tenant, parsed, n);
    pg::Added* found = pg::guard([n] { return static_cast<pg::Added*>(palloc(sizeof(pg::Added) * (n + 1))); });
    int* repeat = repeats(parsed, with_runs);
    bool* insert = pg::guard([n] { return static_cast<bool*>(palloc(sizeof(bool) * (n + 1))); });
    std::int64_t* ids = pg::guard([n] { return static_cast<std::int64_t*>(palloc(sizeof(std::int64_t) * (n + 1))); });
    bool ids_taken = false;
    bool added = false;
    if (std::all_of(repeat, repeat + with_runs, [](int r) { return r < 0; })) {
        // Keys all new, as most batches' are: inserted at once, not looked up first. A key
        // found taken rolls the insert back; then they are looked up, below, and keep
        // their ids.
        for (int i = 0; i < with_runs; i++) {
            found[i] = {pg::Added::kNeither, 0, false};
            insert[i] = true;
        }
        store.take_ids(with_runs, ids);
        ids_taken = true;
        added = store.add_all(tenant, parsed, with_runs, insert, ids, false);
    }
    if (!added) {
        store.taken(tenant, parsed, with_runs, found);
        for (int i = 0; i < with_runs; i++) {
            bool conflict = found[i].outcome == pg::Added::kExisting
                                ? !found[i].same
                                : repeat[i] >= 0 && !(same_json(parsed[i].payload, parsed[repeat[i]].payload) &&
                                                      same_json(parsed[i].binding, parsed[repeat[i]].binding));
            if (conflict) {
                store.close();
                enqueue_each(store, tenant, parsed, n, rsinfo);
                return static_cast<Datum>(0);
            }
            insert[i] = found[i].outcome != pg::Added::kExisting && repeat[i] < 0;
        }
        if (!ids_taken) store.take_ids(with_runs, ids);
        if (!store.add_all(tenant, parsed, with_runs, insert, ids, true)) {
            store.close();
            enqueue_each(store, tenant, parsed, n, rsinfo);
            return static_cast<Datum>(0);
        }
    }
    store.close();  // the direct insert's rows visible to the look-ups below
    const text* notified = nullptr;  // the target of the last wake-up queued for the inserted items
    for (int i = 0; i < n; i++) {
        Enqueued e{0, false};
        if (i < with_runs && found[i].outcome == pg::Added::kExisting) {
            e = {found[i].id, false};
        } else if (i < with_runs && repeat[i] >= 0 && ids[repeat[i]] != 0) {
            e = {ids[repeat[i]], false};
        } else if (i < with_runs && ids[i] != 0) {
            e = {ids[i], true};
            // NOTIFY sends one wake-up per channel and transaction: one call per run of a target.
            if (notified == nullptr || pg::text_view(notified) != pg::text_view(parsed[i].target)) {
                pg::notify::enqueued(tenant, parsed[i].target);
                notified = parsed[i].target;
            }
        } else {
            // Its key was taken since the look-up (or its first user's was), or its run is missing.
            try {
                std::optional<Enqueued> now;
                if (i < with_runs) now = enqueued(tenant, parsed[i], store.existing(tenant, parsed[i]));
                e = now ? *now : enqueue_item(store, tenant, parsed[i]);
            } catch (const Error& err) {
                throw Error(err.state(), err.message(), "Item " + std::to_string(i) + ": " + err.detail(),
                            err.hint());
            }
        }
        Datum values[2] = {Int64GetDatum(e.id), BoolGetDatum(e.inserted)};
        bool nulls[2] = {false, false};
        pg::put_row(rsinfo, values, nulls);
    }
    return static_cast<Datum>(0);
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_enqueue, baton::api::enqueue)
BATON_FUNCTION(baton_enqueue_keyed, baton::api::enqueue_keyed)
BATON_FUNCTION(baton_enqueue_batch, baton::api::enqueue_batch)
