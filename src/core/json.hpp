// A small, strict JSON reader and writer (RFC 8259), free of Postgres.
//
// The Postgres layer hands the core the text output of jsonb (definitions, decisions,
// saved results) and reads back what the core writes; the reader is strict enough to
// refuse anything jsonb would refuse and robust against any byte string (it is fuzzed):
// nesting is bounded, every byte is checked, errors are baton::Error, never a crash.
//
//   - Whitespace is space, tab, LF and CR only; no BOM, comments or trailing commas.
//   - Numbers follow the RFC grammar and keep their original text (no precision lost).
//   - Strings must be valid UTF-8 (no overlong forms, no encoded surrogates); escapes
//     decode to UTF-8, surrogate pairs included. A lone surrogate is an error, and so is
//     \u0000, as in jsonb: a decoded string never holds a NUL byte.
//   - Objects keep their members in order, duplicates included; lookups take the LAST
//     member of a name, as jsonb keeps the last.
//   - Arrays and objects nest at most kMaxDepth deep.
#pragma once
#ifdef POSTGRES_H
#error "core headers are included before postgres.h (its macros rename libc functions)"
#endif

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace baton::json {

// Arrays and objects nested deeper than this are refused by parse and write.
constexpr int kMaxDepth = 200;

enum class Kind { kNull, kBoolean, kNumber, kString, kArray, kObject };

// One JSON value. Only the fields of its kind are meaningful; the others stay empty.
struct Value {
    Kind kind = Kind::kNull;
    bool b = false;                                      // kBoolean
    std::string text;                                    // kNumber: its text; kString: UTF-8
    std::vector<Value> items;                            // kArray
    std::vector<std::pair<std::string, Value>> members;  // kObject, in order
};

// Reads one JSON text (surrounding whitespace allowed, nothing else after the value).
// Throws baton::Error 22023 "invalid JSON text" with a detail naming the byte offset and
// what was expected there.
Value parse(std::string_view text);

// Writes a value as compact JSON (no whitespace), members in order. Strings are escaped
// so that parse reads them back byte for byte. Throws baton::Error 22023 when the value
// cannot be written as JSON that parse accepts: a number whose text is not a JSON number,
// a string that is not valid UTF-8 or holds a NUL byte, nesting deeper than kMaxDepth.
std::string write(const Value& value);

// The member of an object with this key (the last one, when the key repeats); nullptr
// when there is none or when the value is not an object.
const Value* find(const Value& object, std::string_view key);

// True for a number written as an integer: an optional minus and digits, no fraction and
// no exponent ("1.0" and "1e2" are not integers, whatever their value).
bool is_integer(const Value& value);

// The value of an integer number that fits in 64 bits; nullopt otherwise (not a number,
// not an integer as is_integer reads it, or out of range).
std::optional<std::int64_t> as_int64(const Value& value);

// "null", "boolean", "number", "string", "array", "object": for error details.
const char* kind_name(Kind kind);

// Structural equality: same kind, same number text, same strings, members in the same
// order. ("1.0" and "1" are different numbers here; so are objects in another order.)
bool operator==(const Value& a, const Value& b);
inline bool operator!=(const Value& a, const Value& b) {
    return !(a == b);
}

// Builders, for the Postgres layer and the tests.
Value make_null();
Value make_bool(bool b);
Value make_int(std::int64_t n);
// A number from its JSON text; write refuses the value if the text is not a JSON number.
Value make_number(std::string text);
Value make_string(std::string text);
Value make_array(std::vector<Value> items);
Value make_object(std::vector<std::pair<std::string, Value>> members);

// A string quoted for an error detail: in double quotes, at most max_bytes of it (cut at
// a character boundary, "..." after the quote when cut), quotes, backslashes and control
// characters escaped as in JSON and bytes that are not UTF-8 as \xNN, so that any input,
// however long or broken, makes a short, printable, valid UTF-8 detail.
std::string excerpt(std::string_view s, std::size_t max_bytes = 64);

}  // namespace baton::json
