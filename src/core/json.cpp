// The core's JSON values and their helpers (see json.hpp).
#include "core/json.hpp"

#include <cstdio>

#include "core/error.hpp"

namespace baton::json {

namespace {

// Length of the well-formed UTF-8 sequence (RFC 3629) that starts at s[i], or 0 when the
// bytes there are not one: overlong forms, encoded surrogates and code points above
// U+10FFFF are refused, so everything accepted decodes to a Unicode scalar value.
std::size_t utf8_length(std::string_view s, std::size_t i) {
    const auto byte = [&](std::size_t k) -> unsigned {
        return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0x100u;
    };
    const auto cont = [&](std::size_t k) { return byte(k) >= 0x80 && byte(k) <= 0xBF; };
    const unsigned c = byte(0);
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return cont(1) ? 2 : 0;
    if (c == 0xE0)
        return byte(1) >= 0xA0 && byte(1) <= 0xBF && cont(2) ? 3 : 0;
    if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF)
        return cont(1) && cont(2) ? 3 : 0;
    if (c == 0xED)
        return byte(1) >= 0x80 && byte(1) <= 0x9F && cont(2) ? 3 : 0;
    if (c == 0xF0)
        return byte(1) >= 0x90 && byte(1) <= 0xBF && cont(2) && cont(3) ? 4 : 0;
    if (c >= 0xF1 && c <= 0xF3)
        return cont(1) && cont(2) && cont(3) ? 4 : 0;
    if (c == 0xF4)
        return byte(1) >= 0x80 && byte(1) <= 0x8F && cont(2) && cont(3) ? 4 : 0;
    return 0;
}

// Two lowercase hex digits of a byte, for \u00XX and \xNN escapes.
std::string hex_byte(unsigned char c) {
    char buf[3];
    std::snprintf(buf, sizeof buf, "%02x", c);
    return buf;
}

}  // namespace

// Counts the brackets outside strings; a backslash in a string escapes the next byte.
std::size_t nesting_offset(std::string_view text, int max_depth) {
    int depth = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth)
                return i;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return std::string_view::npos;
}

// The detail names the offset, the limit and the level that broke it.
Error too_deep(std::size_t offset) {
    return Error(SqlState::kInvalidParameterValue, "invalid JSON text",
                 "At byte offset " + std::to_string(offset) + ": arrays and objects nest at most " +
                     std::to_string(kMaxDepth) + " levels deep, and level " + std::to_string(kMaxDepth + 1) +
                     " starts here.");
}

// Scans the members from the end, so that the last of a repeated key wins.
const Value* find(const Value& object, std::string_view key) {
    if (object.kind != Kind::kObject)
        return nullptr;
    for (auto it = object.members.rbegin(); it != object.members.rend(); ++it)
        if (it->first == key)
            return &it->second;
    return nullptr;
}

// -?(0|[1-9][0-9]*): the integer part of RFC 8259's number grammar, and nothing after it.
bool is_integer(const Value& value) {
    if (value.kind != Kind::kNumber)
        return false;
    std::string_view digits = value.text;
    if (!digits.empty() && digits.front() == '-')
        digits.remove_prefix(1);
    if (digits.empty() || (digits.front() == '0' && digits.size() > 1))
        return false;
    return digits.find_first_not_of("0123456789") == std::string_view::npos;
}

// Accumulates the digits as an unsigned magnitude, refusing it once it passes the limit
// of the sign (2^63 - 1, or 2^63 for a negative number).
std::optional<std::int64_t> as_int64(const Value& value) {
    if (!is_integer(value))
        return std::nullopt;
    std::string_view digits = value.text;
    const bool negative = digits.front() == '-';
    if (negative)
        digits.remove_prefix(1);
    const std::uint64_t limit = negative ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;
    std::uint64_t magnitude = 0;
    for (char c : digits) {
        const std::uint64_t d = static_cast<std::uint64_t>(c - '0');
        if (magnitude > (limit - d) / 10)
            return std::nullopt;
        magnitude = magnitude * 10 + d;
    }
    if (!negative)
        return static_cast<std::int64_t>(magnitude);
    // -(2^63) has no positive counterpart: build it from -(magnitude - 1) - 1.
    if (magnitude == 0)
        return 0;
    return -static_cast<std::int64_t>(magnitude - 1) - 1;
}

// The spelling of each kind.
const char* kind_name(Kind kind) {
    switch (kind) {
        case Kind::kNull:
            return "null";
        case Kind::kBoolean:
            return "boolean";
        case Kind::kNumber:
            return "number";
        case Kind::kString:
            return "string";
        case Kind::kArray:
            return "array";
        case Kind::kObject:
            return "object";
    }
    return "null";
}

// Compares the fields that belong to the kind, recursively.
bool operator==(const Value& a, const Value& b) {
    if (a.kind != b.kind)
        return false;
    switch (a.kind) {
        case Kind::kNull:
            return true;
        case Kind::kBoolean:
            return a.b == b.b;
        case Kind::kNumber:
        case Kind::kString:
            return a.text == b.text;
        case Kind::kArray:
            return a.items == b.items;
        case Kind::kObject:
            return a.members == b.members;
    }
    return false;
}

// The builders fill in the kind and the one field that belongs to it.
Value make_null() {
    return Value{};
}

// See make_null.
Value make_bool(bool b) {
    Value v;
    v.kind = Kind::kBoolean;
    v.b = b;
    return v;
}

// See make_null; the decimal text of n is a JSON integer.
Value make_int(std::int64_t n) {
    return make_number(std::to_string(n));
}

// See make_null.
Value make_number(std::string text) {
    Value v;
    v.kind = Kind::kNumber;
    v.text = std::move(text);
    return v;
}

// See make_null.
Value make_string(std::string text) {
    Value v;
    v.kind = Kind::kString;
    v.text = std::move(text);
    return v;
}

// See make_null.
Value make_array(std::vector<Value> items) {
    Value v;
    v.kind = Kind::kArray;
    v.items = std::move(items);
    return v;
}

// See make_null.
Value make_object(std::vector<std::pair<std::string, Value>> members) {
    Value v;
    v.kind = Kind::kObject;
    v.members = std::move(members);
    return v;
}

// Walks s a character at a time, escaping what would not print or not be UTF-8, and stops
// before the character that would take it past max_bytes of s.
std::string excerpt(std::string_view s, std::size_t max_bytes) {
    std::string out = "\"";
    std::size_t i = 0;
    while (i < s.size()) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        std::size_t len = 1;
        std::string piece;
        if (c >= 0x80) {
            len = utf8_length(s, i);
            if (len == 0) {
                len = 1;
                piece = "\\x" + hex_byte(c);
            } else {
                piece.assign(s.data() + i, len);
            }
        } else if (c == '"' || c == '\\') {
            piece = std::string("\\") + static_cast<char>(c);
        } else if (c == '\n') {
            piece = "\\n";
        } else if (c == '\t') {
            piece = "\\t";
        } else if (c < 0x20 || c == 0x7F) {
            piece = "\\u00" + hex_byte(c);
        } else {
            piece = std::string(1, static_cast<char>(c));
        }
        if (i + len > max_bytes) {
            out += "\"...";
            return out;
        }
        out += piece;
        i += len;
    }
    out += '"';
    return out;
}

}  // namespace baton::json
