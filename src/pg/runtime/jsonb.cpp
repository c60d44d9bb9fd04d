// jsonb and the core's JSON tree (see jsonb.hpp).
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "core/json.hpp"
#include "pg/runtime/args.hpp"
#include "pg/runtime/jsonb.hpp"

namespace baton::pg {

namespace {

// One token of a jsonb walk, in palloc'd memory: a plain struct, so that the whole walk
// runs under one guard().
struct Token {
    JsonbIteratorToken kind;  // WJB_BEGIN_OBJECT, WJB_KEY, WJB_VALUE, WJB_ELEM, WJB_END_ARRAY, ...
    jbvType type;             // of a key or scalar: jbvNull, jbvString, jbvNumeric, jbvBool
    bool boolean;
    const char* text;  // a string (UTF-8) or a number's text (numeric_out); not NUL-terminated
    int len;
};

// The tokens of a walk, or too_deep when it stopped at a level deeper than kMaxDepth.
struct Walk {
    Token* tokens;
    int count;
    bool too_deep;
};

// Walks jb with JsonbIteratorNext into tokens: Postgres calls and plain locals only. The
// pseudo-array around a scalar root is left out; strings are converted to UTF-8 when the
// database is not UTF8 (require_json_utf8 has checked that they convert).
Walk walk(const Jsonb* jb) {
    return guard([jb] {
        bool convert = GetDatabaseEncoding() != PG_UTF8;
        Walk w{static_cast<Token*>(palloc(sizeof(Token) * 16)), 0, false};
        int capacity = 16;
        int depth = 0;
        JsonbIterator* it = JsonbIteratorInit(const_cast<JsonbContainer*>(&jb->root));
        JsonbValue v;
        JsonbIteratorToken r;
        while ((r = JsonbIteratorNext(&it, &v, false)) != WJB_DONE) {
            if (JB_ROOT_IS_SCALAR(jb) && (r == WJB_BEGIN_ARRAY || r == WJB_END_ARRAY)) continue;
            if (r == WJB_BEGIN_ARRAY || r == WJB_BEGIN_OBJECT) depth++;
            if (depth > json::kMaxDepth) {
                w.too_deep = true;
                break;
            }
            if (r == WJB_END_ARRAY || r == WJB_END_OBJECT) depth--;
            if (w.count == capacity) {
                capacity *= 2;
                w.tokens = static_cast<Token*>(repalloc(w.tokens, sizeof(Token) * capacity));
            }
            Token* t = &w.tokens[w.count++];
            *t = Token{r, jbvNull, false, nullptr, 0};
            if (r != WJB_KEY && r != WJB_VALUE && r != WJB_ELEM) continue;
            t->type = v.type;
            if (v.type == jbvBool) t->boolean = v.val.boolean;
            if (v.type == jbvNumeric) {
                t->text = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v.val.numeric)));
                t->len = static_cast<int>(strlen(t->text));
            }
            if (v.type == jbvString) {
                t->text = v.val.string.val;
                t->len = v.val.string.len;
                char* utf8 = convert ? pg_server_to_any(t->text, t->len, PG_UTF8) : nullptr;
                if (utf8 != nullptr && utf8 != t->text) {
                    t->text = utf8;
                    t->len = static_cast<int>(strlen(utf8));
                }
            }
        }
        return w;
    });
}

// The value that starts at tokens[i], read into the core's tree; i moves past it. The
// recursion is bounded by the walk's depth check.
json::Value build(const Token* tokens, int& i) {
    const Token& t = tokens[i++];
    if (t.kind == WJB_BEGIN_OBJECT) {
        json::Value object = json::make_object({});
        while (tokens[i].kind != WJB_END_OBJECT) {
            std::string key(tokens[i].text, tokens[i].len);
            ++i;
            object.members.emplace_back(std::move(key), build(tokens, i));
        }
        ++i;  // WJB_END_OBJECT
        return object;
    }
    if (t.kind == WJB_BEGIN_ARRAY) {
        json::Value array = json::make_array({});
        while (tokens[i].kind != WJB_END_ARRAY) array.items.push_back(build(tokens, i));
        ++i;  // WJB_END_ARRAY
        return array;
    }
    switch (t.type) {
        case jbvString: return json::make_string(std::string(t.text, t.len));
        case jbvNumeric: return json::make_number(std::string(t.text, t.len));
        case jbvBool: return json::make_bool(t.boolean);
        default: return json::make_null();
    }
}

// The refusal of a value deeper than kMaxDepth, naming the offset in its text (printed
// as jsonb prints it, and converted to UTF-8 outside a UTF8 database, so that the offset
// counts the bytes of the UTF-8 text json::nesting_offset reads).
[[noreturn]] void throw_too_deep(const Jsonb* jb) {
    const char* text = guard([jb] {
        char* s = JsonbToCString(nullptr, const_cast<JsonbContainer*>(&jb->root), VARSIZE(jb));
        return GetDatabaseEncoding() == PG_UTF8 ? s : pg_server_to_any(s, static_cast<int>(strlen(s)), PG_UTF8);
    });
    throw json::too_deep(json::nesting_offset(text));
}

// A string of the tree as a JsonbValue, in the server encoding (inside guard()). It
// points into the tree, which outlives the builder, unless it had to be converted.
JsonbValue string_value(const std::string& text, bool convert) {
    JsonbValue s;
    s.type = jbvString;
    s.val.string.val = const_cast<char*>(text.data());
    s.val.string.len = static_cast<int>(text.size());
    char* server = convert ? pg_any_to_server(s.val.string.val, s.val.string.len, PG_UTF8) : nullptr;
    if (server != nullptr && server != s.val.string.val) {
        s.val.string.val = server;
        s.val.string.len = static_cast<int>(strlen(server));
    }
    return s;
}

// Pushes a value of the tree onto the builder as `token` (WJB_VALUE, WJB_ELEM, or for a
// container its own begin and end) and returns what pushJsonbValue returned last: at the
// root's end, the whole value. Inside guard(): Postgres calls only, nothing throws.
JsonbValue* push(JsonbParseState** state, const json::Value& v, JsonbIteratorToken token, bool convert) {
    JsonbValue s;
    switch (v.kind) {
        case json::Kind::kObject:
            pushJsonbValue(state, WJB_BEGIN_OBJECT, nullptr);
            for (const auto& m : v.members) {
                JsonbValue key = string_value(m.first, convert);
                pushJsonbValue(state, WJB_KEY, &key);
                push(state, m.second, WJB_VALUE, convert);
            }
            return pushJsonbValue(state, WJB_END_OBJECT, nullptr);
        case json::Kind::kArray:
            pushJsonbValue(state, WJB_BEGIN_ARRAY, nullptr);
            for (const json::Value& item : v.items) push(state, item, WJB_ELEM, convert);
            return pushJsonbValue(state, WJB_END_ARRAY, nullptr);
        case json::Kind::kString: s = string_value(v.text, convert); break;
        case json::Kind::kNumber:
            s.type = jbvNumeric;
            s.val.numeric = DatumGetNumeric(DirectFunctionCall3(numeric_in, CStringGetDatum(v.text.c_str()),
                                                                ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)));
            break;
        case json::Kind::kBoolean:
            s.type = jbvBool;
            s.val.boolean = v.b;
            break;
        case json::Kind::kNull: s.type = jbvNull; break;
    }
    // A scalar at the root is a value of its own; JsonbValueToJsonb wraps it.
    return *state == nullptr ? static_cast<JsonbValue*>(memcpy(palloc(sizeof s), &s, sizeof s))
                             : pushJsonbValue(state, token, &s);
}

}  // namespace

// Checks the encoding first (outside a UTF8 database), then walks and builds; a walk that
// went too deep is refused with the offset the text would show.
json::Value jsonb_value(const Jsonb* jb) {
    require_json_utf8(jb);
    Walk w = walk(jb);
    if (w.too_deep) throw_too_deep(jb);
    int i = 0;
    return build(w.tokens, i);
}

// Builds the whole value under one guard(): the tree is only read there, and lives on
// in the caller's frame, so an error longjmps over nothing with a destructor.
Jsonb* jsonb_of(const json::Value& value) {
    const json::Value* v = &value;
    return guard([v] {
        JsonbParseState* state = nullptr;
        return JsonbValueToJsonb(push(&state, *v, WJB_VALUE, GetDatabaseEncoding() != PG_UTF8));
    });
}

// Prints the value and converts its text as a whole, so that a refusal names the first
// bytes that are not UTF-8 as they stand in the text.
void require_json_utf8(const Jsonb* jb) {
    if (guard([] { return GetDatabaseEncoding(); }) == PG_UTF8) return;
    char* text = guard([jb] { return JsonbToCString(nullptr, const_cast<JsonbContainer*>(&jb->root), VARSIZE(jb)); });
    int len = static_cast<int>(strlen(text));
    if (ErrorData* e = attempt([text, len] { (void)pg_server_to_any(text, len, PG_UTF8); }))
        throw Error(SqlState::kInvalidParameterValue, "invalid JSON text",
                    std::string("It is not valid UTF-8: ") + (e->message ? e->message : "invalid byte sequence") + ".");
}

// require_json_utf8, worded as the refusal of an argument.
void check_json_utf8(const char* name, const Jsonb* jb) {
    try {
        require_json_utf8(jb);
    } catch (const Error& e) {
        throw_invalid_argument(name, std::string(name) + " is read as UTF-8 text. " + e.detail());
    }
}

}  // namespace baton::pg
