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
#include "pg/runtime/args.hpp"
#include "pg/deliveries/delivery_batch.hpp"

namespace baton::pg {

namespace {

// One field of a batch item, as Postgres found it.
struct Field {
    bool present;  // present and not JSON null
    JsonbValue value;
};

// The keys an item may have, in the order of its Fields.
enum Key {
    kTargetKey, kDedupKey, kPayloadKey, kBindingKey, kRunAfterKey, kPriorityKey, kMaxAttemptsKey, kRunIdKey, kKeyKey,
    kKeys
};
const char* const kKeyNames[kKeys] = {"target",   "dedup_key",    "payload", "binding", "run_after",
                                      "priority", "max_attempts", "run_id",  "key"};

// Reads every key of a batch item's object in one pass into fields (indexed by Key);
// returns the first key it does not know (palloc'd), or nullptr.
char* read_fields(JsonbContainer* obj, Field* fields) {
    return guard([obj, fields] {
        JsonbIterator* it = JsonbIteratorInit(obj);
        JsonbValue tok;
        JsonbIteratorToken r;
        char* bad = nullptr;
        int key = kKeys;  // the key whose value comes next (kKeys: none we keep)
        while ((r = JsonbIteratorNext(&it, &tok, true)) != WJB_DONE) {
            if (r == WJB_KEY) {
                key = kKeys;
                for (int k = 0; k < kKeys; k++)
                    if (strlen(kKeyNames[k]) == static_cast<size_t>(tok.val.string.len) &&
                        memcmp(kKeyNames[k], tok.val.string.val, tok.val.string.len) == 0)
                        key = k;
                if (key == kKeys && bad == nullptr) bad = pnstrdup(tok.val.string.val, tok.val.string.len);
            } else if (r == WJB_VALUE && key != kKeys) {
                fields[key].present = tok.type != jbvNull;
                fields[key].value = tok;
            }
        }
        return bad;
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
    if (element->type != jbvBinary || !JsonContainerIsObject(element->val.binary.data))
        throw_invalid_argument("items", "Each item is a JSON object.");
    // Unknown keys: a typo must not silently drop a field.
    Field fields[kKeys] = {};
    char* unknown = read_fields(element->val.binary.data, fields);
    if (unknown != nullptr)
        throw_invalid_argument("items", "Unknown key \"" + std::string(unknown).substr(0, 64) +
                                            "\"; an item has target, dedup_key, payload, binding, "
                                            "run_after, priority, max_attempts, run_id and key.");

    NewDelivery item{};
    item.priority = 0;
    item.max_attempts = 3;
    // A string field's value, checked to be a string; nullptr when it is absent and
    // may be.
    auto string_value = [&fields](Key k, bool required) -> const JsonbValue* {
        const Field& f = fields[k];
        if (!f.present) {
            if (required) throw_invalid_argument("items", std::string("The item has no ") + kKeyNames[k] + ".");
            return nullptr;
        }
        if (f.value.type != jbvString)
            throw_invalid_argument("items", std::string(kKeyNames[k]) + " is a JSON string.");
        return &f.value;
    };
    // A required string field as text; an optional one as a C string (nullptr when absent).
    auto text_field = [&string_value](Key k) -> text* {
        const JsonbValue* v = string_value(k, true);
        return guard([v] { return cstring_to_text_with_len(v->val.string.val, v->val.string.len); });
    };
    auto string_field = [&string_value](Key k) -> char* {
        const JsonbValue* v = string_value(k, false);
        if (v == nullptr) return nullptr;
        return guard([v] { return pnstrdup(v->val.string.val, v->val.string.len); });
    };
    auto json_field = [&fields](Key k) -> Jsonb* {
        const Field& f = fields[k];
        if (!f.present) return empty_object();
        JsonbValue v = f.value;
        return guard([v]() mutable { return JsonbValueToJsonb(&v); });
    };
    auto int_field = [&fields](Key k, std::int32_t fallback) -> std::int32_t {
        const char* key = kKeyNames[k];
        const Field& f = fields[k];
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

    item.target = text_field(kTargetKey);
    item.dedup_key = text_field(kDedupKey);
    item.payload = json_field(kPayloadKey);
    item.binding = json_field(kBindingKey);
    if (char* ra = string_field(kRunAfterKey)) {
        item.has_run_after = true;
        item.run_after = DatumGetTimestampTz(parse("run_after", ra, timestamptz_in));
    }
    item.priority = int_field(kPriorityKey, 0);
    item.max_attempts = int_field(kMaxAttemptsKey, 3);
    if (char* run = string_field(kRunIdKey)) item.run_id = DatumGetUUIDP(parse("run_id", run, uuid_in));
    if (const JsonbValue* key = string_value(kKeyKey, false))
        item.key = guard([key] { return cstring_to_text_with_len(key->val.string.val, key->val.string.len); });
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
