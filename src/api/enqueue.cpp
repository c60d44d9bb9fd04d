// enqueue and enqueue_batch: new pending deliveries, idempotent on (tenant, target,
// dedup_key), with a batch's JSON items read and checked before the first write.
#include <cstring>
#include <optional>
#include <string>

#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/limits.hpp"
#include "core/tenant.hpp"
#include "pg/args.hpp"
#include "pg/delivery_store.hpp"
#include "pg/fence.hpp"
#include "pg/notify.hpp"
#include "pg/read_only.hpp"
#include "pg/spi.hpp"

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
}

struct Enqueued {
    std::int64_t id;
    bool inserted;
};

// Inserts the item, or finds the delivery its key already names: the same payload and
// binding return that id (nothing changes); different ones are DU009; a run_id that
// names no run of the tenant is DU008. The fence has been checked by the caller.
Enqueued enqueue_item(pg::DeliveryStore& store, pg_uuid_t* tenant, const pg::NewDelivery& item) {
    if (item.run_id != nullptr && !store.run_exists(tenant, item.run_id))
        throw Error(SqlState::kNotFound,
                    "run " + pg::uuid_text(item.run_id) + " does not exist in tenant " + pg::uuid_text(tenant),
                    "A delivery's run_id names a run of the same tenant.");
    // A concurrent producer's row can vanish between the insert and the look-up only if
    // it is removed at that moment; then the insert is tried once more.
    for (int tries = 0; tries < 3; tries++) {
        pg::Added added = store.add(tenant, item);
        if (added.outcome == pg::Added::kInserted) {
            pg::notify::enqueued(tenant, item.target);
            return {added.id, true};
        }
        if (added.outcome == pg::Added::kNeither) continue;
        if (!added.same)
            throw Error(SqlState::kDedupConflict,
                        "dedup key " + pg::quoted(item.dedup_key) + " of target " + pg::quoted(item.target) +
                            " is already used with another payload or binding in tenant " + pg::uuid_text(tenant),
                        "An enqueue repeated with the same key must carry the same payload and binding.",
                        "Use a new dedup key for different work.");
        return {added.id, false};
    }
    throw Error(SqlState::kInternal, "enqueue could neither insert nor find its delivery with dedup key " +
                                         pg::quoted(item.dedup_key) + " of target " + pg::quoted(item.target));
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
    item.payload = pg::jsonb_arg(fcinfo, 3, "payload");
    item.binding = pg::jsonb_arg(fcinfo, 4, "binding");
    item.has_run_after = !PG_ARGISNULL(5);
    item.run_after = item.has_run_after ? PG_GETARG_TIMESTAMPTZ(5) : 0;
    item.priority = pg::int32_arg(fcinfo, 6, "priority");
    item.max_attempts = pg::int32_arg(fcinfo, 7, "max_attempts");
    item.run_id = PG_ARGISNULL(8) ? nullptr : PG_GETARG_UUID_P(8);
    check_item(item);
    pg::fence::require_writable(tenant);
    pg::DeliveryStore store;
    PG_RETURN_INT64(enqueue_item(store, tenant, item).id);
}

// One field of a batch item, as Postgres found it.
struct Field {
    bool present;  // present and not JSON null
    JsonbValue value;
};

// Looks a key up in a batch item's object.
Field item_field(JsonbContainer* obj, const char* key) {
    return pg::guard([obj, key] {
        Field f{};
        JsonbValue* v = getKeyJsonValueFromContainer(obj, key, static_cast<int>(strlen(key)), &f.value);
        f.present = v != nullptr && v->type != jbvNull;
        return f;
    });
}
// Reads batch item i (an object) into a NewDelivery, refusing (22023) unknown keys and
// values of the wrong kind.
pg::NewDelivery read_batch_item(JsonbValue* element) {
    static const char* const kKeys[] = {"target", "dedup_key", "payload", "binding",
                                        "run_after", "priority", "max_attempts", "run_id"};
    if (element->type != jbvBinary || !JsonContainerIsObject(element->val.binary.data))
        throw_invalid_argument("items", "Each item is a JSON object.");
    JsonbContainer* obj = element->val.binary.data;
    // Unknown keys: a typo must not silently drop a field.
    char* unknown = pg::guard([obj] {
        JsonbIterator* it = JsonbIteratorInit(obj);
        JsonbValue tok;
        JsonbIteratorToken r;
        char* bad = nullptr;
        while ((r = JsonbIteratorNext(&it, &tok, true)) != WJB_DONE) {
            if (r != WJB_KEY || bad != nullptr) continue;
            bool known = false;
            for (const char* k : kKeys)
                if (strlen(k) == static_cast<size_t>(tok.val.string.len) &&
                    memcmp(k, tok.val.string.val, tok.val.string.len) == 0)
                    known = true;
            if (!known) bad = pnstrdup(tok.val.string.val, tok.val.string.len);
        }
        return bad;
    });
    if (unknown != nullptr)
        throw_invalid_argument("items", "Unknown key \"" + std::string(unknown).substr(0, 64) +
                                            "\"; an item has target, dedup_key, payload, binding, "
                                            "run_after, priority, max_attempts and run_id.");

    pg::NewDelivery item{};
    item.priority = 0;
    item.max_attempts = 3;
    auto string_field = [obj](const char* key, bool required) -> char* {
        Field f = item_field(obj, key);
        if (!f.present) {
            if (required) throw_invalid_argument("items", std::string("The item has no ") + key + ".");
            return nullptr;
        }
        if (f.value.type != jbvString)
            throw_invalid_argument("items", std::string(key) + " is a JSON string.");
        const JsonbValue v = f.value;
        return pg::guard([v] { return pnstrdup(v.val.string.val, v.val.string.len); });
    };
    auto json_field = [obj](const char* key) -> Jsonb* {
        Field f = item_field(obj, key);
        if (!f.present) return pg::guard([] { return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum("{}"))); });
        JsonbValue v = f.value;
        return pg::guard([v]() mutable { return JsonbValueToJsonb(&v); });
    };
    auto int_field = [obj](const char* key, std::int32_t fallback) -> std::int32_t {
        Field f = item_field(obj, key);
        if (!f.present) return fallback;
        if (f.value.type != jbvNumeric) throw_invalid_argument("items", std::string(key) + " is a JSON number.");
        Numeric n = f.value.val.numeric;
        char* digits = pg::guard([n] { return DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(n))); });
        std::optional<std::int64_t> v = json::as_int64(json::make_number(digits));
        if (!v || *v < INT32_MIN || *v > INT32_MAX)
            throw_invalid_argument("items", std::string(key) + " is an integer in the range of int4.");
        return static_cast<std::int32_t>(*v);
    };
    // Parses text with a type's input function, reporting its failure as 22023.
    auto parse = [](const char* key, char* value, PGFunction in) -> Datum {
        Datum result = 0;
        if (pg::attempt([value, in, &result] {
                result = DirectFunctionCall3(in, CStringGetDatum(value), ObjectIdGetDatum(InvalidOid),
                                             Int32GetDatum(-1));
            }) != nullptr)
            throw_invalid_argument("items", std::string(key) + " does not read as its type.");
        return result;
    };

    char* target = string_field("target", true);
    char* dedup_key = string_field("dedup_key", true);
    item.target = DatumGetTextPP(pg::text_datum(target));
    item.dedup_key = DatumGetTextPP(pg::text_datum(dedup_key));
    item.payload = json_field("payload");
    item.binding = json_field("binding");
    if (char* ra = string_field("run_after", false)) {
        item.has_run_after = true;
        item.run_after = DatumGetTimestampTz(parse("run_after", ra, timestamptz_in));
    }
    item.priority = int_field("priority", 0);
    item.max_attempts = int_field("max_attempts", 3);
    if (char* run = string_field("run_id", false)) item.run_id = DatumGetUUIDP(parse("run_id", run, uuid_in));
    check_item(item);
    return item;
}

// baton.enqueue_batch(tenant, items): enqueues every item of a JSON array, all or
// nothing; returns (id, inserted) per item in order.
Datum enqueue_batch(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.enqueue_batch");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    Jsonb* items = pg::jsonb_arg(fcinfo, 1, "items");
    if (!JB_ROOT_IS_ARRAY(items) || JB_ROOT_IS_SCALAR(items))
        throw_invalid_argument("items", std::string("items is a JSON array of objects, not ") +
                                            cause::kind_name(pg::jsonb_kind(items)) + ".");
    int n = JB_ROOT_COUNT(items);
    if (n > limits::kMaxBatchItems)
        throw_invalid_argument("items", "A batch has at most " + std::to_string(limits::kMaxBatchItems) +
                                            " items; this one has " + std::to_string(n) + ".");
    // Read and check every item before the first write.
    pg::NewDelivery* parsed =
        pg::guard([n] { return static_cast<pg::NewDelivery*>(palloc0(sizeof(pg::NewDelivery) * (n + 1))); });
    for (int i = 0; i < n; i++) {
        JsonbValue* element = pg::guard([items, i] { return getIthJsonbValueFromContainer(&items->root, i); });
        try {
            parsed[i] = read_batch_item(element);
        } catch (const Error& e) {
            throw Error(e.state(), e.message(), "Item " + std::to_string(i) + ": " + e.detail(), e.hint());
        }
    }
    pg::fence::require_writable(tenant);
    ReturnSetInfo* rsinfo = pg::materialize(fcinfo);
    pg::DeliveryStore store;
    for (int i = 0; i < n; i++) {
        Enqueued e;
        try {
            e = enqueue_item(store, tenant, parsed[i]);
        } catch (const Error& err) {
            throw Error(err.state(), err.message(), "Item " + std::to_string(i) + ": " + err.detail(), err.hint());
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
BATON_FUNCTION(baton_enqueue_batch, baton::api::enqueue_batch)
