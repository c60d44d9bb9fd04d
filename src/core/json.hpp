// JSON values as the core reads them, free of Postgres: the tree that definitions,
// decisions and their parts are judged on, and the helpers that judge and quote them.
//
// The Postgres layer (src/pg/runtime/jsonb.hpp) walks jsonb into this tree and builds jsonb back
// from it, so the tree keeps what jsonb keeps: numbers as their text (numeric_out's, no
// precision lost), strings as UTF-8, object members in order. A tree built by hand may
// repeat a key; lookups take the LAST member of a name, as jsonb keeps the last. Trees
// nest at most kMaxDepth levels, so recursion over them is bounded.
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

#include "core/error.hpp"

namespace baton::json {

// Arrays and objects nested deeper than this are refused when jsonb is read into a tree.
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

// The byte offset in a JSON text where an array or object opens at level max_depth + 1
// (the outermost is level 1), or npos when the text nests no deeper than max_depth.
std::size_t nesting_offset(std::string_view text, int max_depth = kMaxDepth);

// The refusal of a value nested deeper than kMaxDepth: baton::Error 22023 "invalid JSON
// text", "At byte offset N: arrays and objects nest at most 200 levels deep, ...", N
// being nesting_offset of the value's text as jsonb prints it.
Error too_deep(std::size_t offset);

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
// A number from its JSON text (is_integer and as_int64 judge the text as it is).
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
