// Reading SQL arguments and jsonb values (see args.hpp).
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/delivery.hpp"
#include "core/error.hpp"
#include "pg/runtime/args.hpp"
#include "pg/runtime/settings.hpp"

namespace baton::pg {

namespace {

// The kind of a JsonbValue as Postgres returns it from a container lookup.
cause::JsonKind value_kind(const JsonbValue* v) {
    switch (v->type) {
        case jbvNull: return cause::JsonKind::kNull;
        case jbvString: return cause::JsonKind::kString;
        case jbvNumeric: return cause::JsonKind::kNumber;
        case jbvBool: return cause::JsonKind::kBool;
        case jbvArray: return cause::JsonKind::kArray;
        case jbvObject: return cause::JsonKind::kObject;
        case jbvBinary:
            return JsonContainerIsObject(v->val.binary.data) ? cause::JsonKind::kObject
                                                             : cause::JsonKind::kArray;
        default: return cause::JsonKind::kString;  // jbvDatetime only arises from jsonpath
    }
}

// What Postgres finds under binding -> 'cause', in palloc'd memory: gathered with
// Postgres calls only, so it can run under one guard().
struct RawCause {
    bool present;
    int kind;        // cause::JsonKind of the value
    int nkeys;       // keys of the value when it is an object
    char** keys;     // their names
    int* kinds;      // the kinds of their values
    char* value0;    // the first key's value as a C string when it is a JSON string
};

RawCause read_cause(const Jsonb* binding) {
    return guard([binding] {
        RawCause raw{};
        JsonbValue v;
        JsonbValue* found = getKeyJsonValueFromContainer(const_cast<JsonbContainer*>(&binding->root),
                                                         "cause", 5, &v);
        if (found == nullptr) return raw;
        raw.present = true;
        raw.kind = static_cast<int>(value_kind(found));
        if (found->type != jbvBinary || !JsonContainerIsObject(found->val.binary.data)) return raw;
        JsonbContainer* obj = found->val.binary.data;
        int n = JsonContainerSize(obj);
        raw.keys = static_cast<char**>(palloc0(sizeof(char*) * (n + 1)));
        raw.kinds = static_cast<int*>(palloc0(sizeof(int) * (n + 1)));
        JsonbIterator* it = JsonbIteratorInit(obj);
        JsonbValue tok;
        JsonbIteratorToken r;
        while ((r = JsonbIteratorNext(&it, &tok, true)) != WJB_DONE) {
            if (r == WJB_KEY && raw.nkeys < n) {
                raw.keys[raw.nkeys] = pnstrdup(tok.val.string.val, tok.val.string.len);
            } else if (r == WJB_VALUE && raw.nkeys < n) {
                raw.kinds[raw.nkeys] = static_cast<int>(value_kind(&tok));
                if (raw.nkeys == 0 && tok.type == jbvString)
                    raw.value0 = pnstrdup(tok.val.string.val, tok.val.string.len);
                raw.nkeys++;
            }
        }
        return raw;
    });
}

}  // namespace

void require(FunctionCallInfo fcinfo, int n, const char* name, Where where) {
    if (PG_ARGISNULL(n)) throw_null_argument(name, where);
}

pg_uuid_t* uuid_arg(FunctionCallInfo fcinfo, int n, const char* name, Where where) {
    require(fcinfo, n, name, where);
    return DatumGetUUIDP(PG_GETARG_DATUM(n));
}

std::int32_t int32_arg(FunctionCallInfo fcinfo, int n, const char* name, Where where) {
    require(fcinfo, n, name, where);
    return PG_GETARG_INT32(n);
}

std::int64_t int64_arg(FunctionCallInfo fcinfo, int n, const char* name, Where where) {
    require(fcinfo, n, name, where);
    return PG_GETARG_INT64(n);
}

text* text_arg(FunctionCallInfo fcinfo, int n, const char* name, Where where) {
    require(fcinfo, n, name, where);
    Datum d = PG_GETARG_DATUM(n);
    return guard([d] { return DatumGetTextPP(d); });
}

text* optional_text_arg(FunctionCallInfo fcinfo, int n) {
    if (PG_ARGISNULL(n)) return nullptr;
    Datum d = PG_GETARG_DATUM(n);
    return guard([d] { return DatumGetTextPP(d); });
}

Jsonb* jsonb_arg(FunctionCallInfo fcinfo, int n, const char* name, Where where) {
    require(fcinfo, n, name, where);
    Datum d = PG_GETARG_DATUM(n);
    return guard([d] { return DatumGetJsonbP(d); });
}

Interval* interval_arg(FunctionCallInfo fcinfo, int n, const char* name, Where where) {
    require(fcinfo, n, name, where);
    return PG_GETARG_INTERVAL_P(n);
}

std::string_view text_view(const text* t) {
    return {VARDATA_ANY(t), static_cast<std::size_t>(VARSIZE_ANY_EXHDR(t))};
}

std::string uuid_text(const pg_uuid_t* id) {
    const char* s = guard([id] {
        return DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum(const_cast<pg_uuid_t*>(id))));
    });
    return s;
}

std::string quoted(const text* t) { return "\"" + std::string(text_view(t)) + "\""; }

std::int64_t text_chars(const text* t) {
    const char* data = VARDATA_ANY(t);
    int len = VARSIZE_ANY_EXHDR(t);
    return guard([data, len] { return pg_mbstrlen_with_len(data, len); });
}

std::int64_t interval_usec(const Interval* iv) {
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
    std::int64_t days = static_cast<std::int64_t>(iv->month) * DAYS_PER_MONTH + iv->day;
    std::int64_t usec = 0;
    if (__builtin_mul_overflow(days, USECS_PER_DAY, &usec) || __builtin_add_overflow(usec, iv->time, &usec))
        return (days < 0 || (days == 0 && iv->time < 0)) ? kMin : kMax;
    return usec;
}

bool jsonb_is_object(const Jsonb* jb) { return JB_ROOT_IS_OBJECT(jb) && !JB_ROOT_IS_SCALAR(jb); }

bool jsonb_is_empty_object(const Jsonb* jb) { return jsonb_is_object(jb) && JB_ROOT_COUNT(jb) == 0; }

bool jsonb_has_key(const Jsonb* jb, const char* key) {
    if (!jsonb_is_object(jb)) return false;
    return guard([jb, key] {
        JsonbValue v;
        return getKeyJsonValueFromContainer(const_cast<JsonbContainer*>(&jb->root), key,
                                            static_cast<uint32>(std::strlen(key)), &v) != nullptr;
    });
}

std::int64_t jsonb_bytes(const Jsonb* jb) { return VARSIZE(jb); }

cause::JsonKind jsonb_kind(const Jsonb* jb) {
    if (JB_ROOT_IS_SCALAR(jb)) {
        return guard([jb] {
            JsonbValue v;
            JsonbExtractScalar(const_cast<JsonbContainer*>(&jb->root), &v);
            return value_kind(&v);
        });
    }
    return JB_ROOT_IS_OBJECT(jb) ? cause::JsonKind::kObject : cause::JsonKind::kArray;
}

std::int64_t max_payload_bytes() { return settings::max_payload_bytes; }

void check_object_argument(const char* name, const Jsonb* jb, Where where) {
    if (!jsonb_is_object(jb))
        throw_invalid_argument(name, std::string(name) + " must be a JSON object, not " +
                                         cause::kind_name(jsonb_kind(jb)) + ".",
                               where);
    delivery::check_json_bytes(name, jsonb_bytes(jb), max_payload_bytes());
}

void check_binding(const Jsonb* binding) {
    check_object_argument("binding", binding);
    RawCause raw = read_cause(binding);
    cause::View view;
    view.present = raw.present;
    view.kind = static_cast<cause::JsonKind>(raw.kind);
    for (int i = 0; i < raw.nkeys; i++)
        view.fields.push_back({raw.keys[i], static_cast<cause::JsonKind>(raw.kinds[i])});
    cause::Kind kind = cause::check(view);
    if (kind != cause::Kind::kSchedule && kind != cause::Kind::kWebhook) return;

    // The value's syntax is Postgres' own: parse it with the type's input function, in a
    // subtransaction, and report its failure as the contract's 22023.
    const char* value = raw.value0;
    bool finite = true;
    ErrorData* error = nullptr;
    if (kind == cause::Kind::kSchedule) {
        error = attempt([value, &finite] {
            Datum ts = DirectFunctionCall3(timestamptz_in, CStringGetDatum(value), ObjectIdGetDatum(InvalidOid),
                                           Int32GetDatum(-1));
            finite = !TIMESTAMP_NOT_FINITE(DatumGetTimestampTz(ts));
        });
    } else {
        error = attempt([value] { (void)DirectFunctionCall1(uuid_in, CStringGetDatum(value)); });
    }
    if (error != nullptr || !finite)
        throw_invalid_argument("binding", kind == cause::Kind::kSchedule
                                              ? "binding.cause.schedule must be a finite timestamptz."
                                              : "binding.cause.webhook must be a uuid.");
}

void check_result(const Jsonb* result) {
    delivery::check_json_bytes("result", jsonb_bytes(result), max_payload_bytes());
}

Datum text_datum(std::string_view s) {
    const char* data = s.data();
    int len = static_cast<int>(s.size());
    return guard([data, len] { return PointerGetDatum(cstring_to_text_with_len(data, len)); });
}

Datum text_from_utf8(std::string_view s) {
    const char* data = s.data();
    int len = static_cast<int>(s.size());
    return guard([data, len] {
        char* converted = pg_any_to_server(data, len, PG_UTF8);
        return PointerGetDatum(converted == data ? cstring_to_text_with_len(data, len) : cstring_to_text(converted));
    });
}

char* tenant_text(const pg_uuid_t* tenant) {
    return guard([tenant] {
        return DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum(const_cast<pg_uuid_t*>(tenant))));
    });
}

}  // namespace baton::pg
