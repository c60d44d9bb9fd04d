// The items of enqueue_batch (see delivery_batch.hpp).
#include <climits>
#include <cstring>
#include <optional>
#include <string>

#include "core/cause.hpp"
#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "pg/args.hpp"
#include "pg/delivery_batch.hpp"

namespace baton::pg {

namespace {

// One field of a batch item, as Postgres found it.
struct Field {
    bool present;  // present and not JSON null
    JsonbValue value;
};

// Looks a key up in a batch item's object.
Field item_field(JsonbContainer* obj, const char* key) {
    return guard([obj, key] {
        Field f{};
        JsonbValue* v = getKeyJsonValueFromContainer(obj, key, static_cast<int>(strlen(key)), &f.value);
        f.present = v != nullptr && v->type != jbvNull;
        return f;
    });
}

// The empty object, an absent payload's or binding's value: built once per backend, in
// TopMemoryContext, and never written to (an item read per call once parsed '{}' twice).
Jsonb* empty_object() {
    static Jsonb* empty = nullptr;
    if (empty == nullptr)
        empty = guard([] {
            MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
            Jsonb* j = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum("{}")));
            MemoryContextSwitchTo(old);
            return j;
        });
    return empty;
}

// Reads one element (an object) into a NewDelivery, refusing (22023) unknown keys and
// values of the wrong kind.
NewDelivery read_item(JsonbValue* element) {
    static const char* const kKeys[] = {"target", "dedup_key", "payload", "binding",
                                        "run_after", "priority", "max_attempts", "run_id"};
    if (element->type != jbvBinary || !JsonContainerIsObject(element->val.binary.data))
        throw_invalid_argument("items", "Each item is a JSON object.");
    JsonbContainer* obj = element->val.binary.data;
    // Unknown keys: a typo must not silently drop a field.
    char* unknown = guard([obj] {
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

    NewDelivery item{};
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
        return guard([v] { return pnstrdup(v.val.string.val, v.val.string.len); });
    };
    auto json_field = [obj](const char* key) -> Jsonb* {
        Field f = item_field(obj, key);
        if (!f.present) return empty_object();
        JsonbValue v = f.value;
        return guard([v]() mutable { return JsonbValueToJsonb(&v); });
    };
    auto int_field = [obj](const char* key, std::int32_t fallback) -> std::int32_t {
        Field f = item_field(obj, key);
        if (!f.present) return fallback;
        if (f.value.type != jbvNumeric) throw_invalid_argument("items", std::string(key) + " is a JSON number.");
        Numeric n = f.value.val.numeric;
        char* digits = guard([n] { return DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(n))); });
        std::optional<std::int64_t> v = json::as_int64(json::make_number(digits));
        if (!v || *v < INT32_MIN || *v > INT32_MAX)
            throw_invalid_argument("items", std::string(key) + " is an integer in the range of int4.");
        return static_cast<std::int32_t>(*v);
    };
    // Parses text with a type's input function, reporting its failure as 22023.
    auto parse = [](const char* key, char* value, PGFunction in) -> Datum {
        Datum result = 0;
        if (attempt([value, in, &result] {
                result = DirectFunctionCall3(in, CStringGetDatum(value), ObjectIdGetDatum(InvalidOid),
                                             Int32GetDatum(-1));
            }) != nullptr)
            throw_invalid_argument("items", std::string(key) + " does not read as its type.");
        return result;
    };

    char* target = string_field("target", true);
    char* dedup_key = string_field("dedup_key", true);
    item.target = DatumGetTextPP(text_datum(target));
    item.dedup_key = DatumGetTextPP(text_datum(dedup_key));
    item.payload = json_field("payload");
    item.binding = json_field("binding");
    if (char* ra = string_field("run_after", false)) {
        item.has_run_after = true;
        item.run_after = DatumGetTimestampTz(parse("run_after", ra, timestamptz_in));
    }
    item.priority = int_field("priority", 0);
    item.max_attempts = int_field("max_attempts", 3);
    if (char* run = string_field("run_id", false)) item.run_id = DatumGetUUIDP(parse("run_id", run, uuid_in));
    return item;
}

}  // namespace

// The root of a jsonb array holds its count.
int batch_length(const Jsonb* items) {
    if (!JB_ROOT_IS_ARRAY(items) || JB_ROOT_IS_SCALAR(items))
        throw_invalid_argument("items", std::string("items is a JSON array of objects, not ") +
                                            cause::kind_name(jsonb_kind(items)) + ".");
    return JB_ROOT_COUNT(items);
}

// Element i of the array, read in place (no copy of the array).
NewDelivery batch_item(const Jsonb* items, int i) {
    JsonbValue* element = guard([items, i] {
        return getIthJsonbValueFromContainer(const_cast<JsonbContainer*>(&items->root), static_cast<uint32>(i));
    });
    return read_item(element);
}

}  // namespace baton::pg
