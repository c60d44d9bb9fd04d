// The strict JSON reader and writer (see json.hpp).
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

// Appends the UTF-8 encoding of a Unicode scalar value (never a surrogate) to out.
void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// Two lowercase hex digits of a byte, for \u00XX and \xNN escapes.
std::string hex_byte(unsigned char c) {
    char buf[3];
    std::snprintf(buf, sizeof buf, "%02x", c);
    return buf;
}

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

// Where the RFC 8259 number grammar, -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?,
// matching from s[i] stops: the index after the number, or the index of the first byte
// that breaks the grammar (with *fault naming what was expected there). Shared by the
// reader (which reports the fault) and the writer (which checks number texts).
std::size_t scan_number(std::string_view s, std::size_t i, const char** fault) {
    *fault = nullptr;
    const std::size_t n = s.size();
    if (i < n && s[i] == '-')
        ++i;
    if (i < n && s[i] == '0') {
        ++i;
        if (i < n && is_digit(s[i])) {
            *fault = "a number without leading zeros";
            return i;
        }
    } else if (i < n && is_digit(s[i])) {
        while (i < n && is_digit(s[i]))
            ++i;
    } else {
        *fault = "a digit";
        return i;
    }
    if (i < n && s[i] == '.') {
        ++i;
        if (i >= n || !is_digit(s[i])) {
            *fault = "a digit after the decimal point";
            return i;
        }
        while (i < n && is_digit(s[i]))
            ++i;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            ++i;
        if (i >= n || !is_digit(s[i])) {
            *fault = "a digit in the exponent";
            return i;
        }
        while (i < n && is_digit(s[i]))
            ++i;
    }
    return i;
}

// True when the whole of s is one JSON number.
bool is_json_number(std::string_view s) {
    const char* fault;
    return scan_number(s, 0, &fault) == s.size() && fault == nullptr;
}

// Throws the error write raises for a value it cannot render as JSON.
[[noreturn]] void unwritable(std::string detail) {
    throw Error(SqlState::kInvalidParameterValue, "value cannot be written as JSON",
                std::move(detail));
}

// The recursive-descent reader. It holds the text and the offset of the next byte, and
// counts nesting so that no input can drive the recursion past kMaxDepth levels.
class Reader {
public:
    explicit Reader(std::string_view text) : s_(text) {}

    // Reads the one value of the text, with optional whitespace around it.
    Value read_text() {
        skip_ws();
        Value v = read_value(0);
        skip_ws();
        if (i_ != s_.size())
            fail("the end of the text after the value");
        return v;
    }

private:
    // Refuses the text: "Expected <expected> at byte offset N, found <what is there>."
    [[noreturn]] void fail(const std::string& expected) { fail_expected(i_, expected); }

    // Refuses the text: "Expected <expected> at byte offset N, found <what is there>."
    [[noreturn]] void fail_expected(std::size_t at, const std::string& expected) {
        throw Error(SqlState::kInvalidParameterValue, "invalid JSON text",
                    "Expected " + expected + " at byte offset " + std::to_string(at) + ", found " +
                        found(at) + ".");
    }

    // Refuses the text: "At byte offset N: <what is wrong there>."
    [[noreturn]] void fail_at(std::size_t at, const std::string& fault) {
        throw Error(SqlState::kInvalidParameterValue, "invalid JSON text",
                    "At byte offset " + std::to_string(at) + ": " + fault + ".");
    }

    // What stands at an offset, for a detail: "the end of the text", "\"x\"" or "byte 0x01".
    std::string found(std::size_t at) const {
        if (at >= s_.size())
            return "the end of the text";
        const unsigned char c = static_cast<unsigned char>(s_[at]);
        if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\')
            return std::string("\"") + static_cast<char>(c) + "\"";
        if (c == '"')
            return "a double quote";
        if (c == '\\')
            return "a backslash";
        return "byte 0x" + hex_byte(c);
    }

    // Skips the four whitespace bytes RFC 8259 allows between tokens.
    void skip_ws() {
        while (i_ < s_.size() &&
               (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
            ++i_;
    }

    // Reads any value at s_[i_]; depth is how many arrays and objects enclose it.
    Value read_value(int depth) {
        if (i_ >= s_.size())
            fail("a value");
        const char c = s_[i_];
        if (c == '{' || c == '[') {
            if (depth >= kMaxDepth)
                fail_at(i_, "arrays and objects nest at most " + std::to_string(kMaxDepth) +
                                " levels deep, and level " + std::to_string(depth + 1) +
                                " starts here");
            return c == '{' ? read_object(depth + 1) : read_array(depth + 1);
        }
        if (c == '"') {
            Value v;
            v.kind = Kind::kString;
            v.text = read_string();
            return v;
        }
        if (c == '-' || is_digit(c))
            return read_number();
        if (c == 't')
            return read_literal("true", make_bool(true));
        if (c == 'f')
            return read_literal("false", make_bool(false));
        if (c == 'n')
            return read_literal("null", make_null());
        fail("a value");
    }

    // Reads one of the literals true, false and null, spelled exactly.
    Value read_literal(std::string_view word, Value v) {
        for (std::size_t k = 0; k < word.size(); ++k) {
            if (i_ + k >= s_.size() || s_[i_ + k] != word[k]) {
                i_ += k;
                fail("\"" + std::string(word) + "\"");
            }
        }
        i_ += word.size();
        return v;
    }

    // Reads a number, keeping its text as written.
    Value read_number() {
        const std::size_t start = i_;
        const char* fault;
        const std::size_t end = scan_number(s_, i_, &fault);
        if (fault != nullptr) {
            i_ = end;
            fail(fault);
        }
        i_ = end;
        Value v;
        v.kind = Kind::kNumber;
        v.text.assign(s_.substr(start, end - start));
        return v;
    }

    // Reads the four hex digits of a \u escape at s_[i_] and returns their value.
    std::uint32_t read_hex4() {
        std::uint32_t v = 0;
        for (int k = 0; k < 4; ++k) {
            if (i_ >= s_.size())
                fail("four hex digits after \\u");
            const char c = s_[i_];
            std::uint32_t d;
            if (c >= '0' && c <= '9')
                d = static_cast<std::uint32_t>(c - '0');
            else if (c >= 'a' && c <= 'f')
                d = static_cast<std::uint32_t>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                d = static_cast<std::uint32_t>(c - 'A' + 10);
            else
                fail("four hex digits after \\u");
            v = v * 16 + d;
            ++i_;
        }
        return v;
    }

    // Reads the \u escape whose backslash is at s_[i_] (a surrogate pair takes two) and
    // appends the character it names to out.
    void read_unicode_escape(std::string& out) {
        const std::size_t start = i_;
        i_ += 2;  // the backslash and the u
        std::uint32_t cp = read_hex4();
        const std::string escape(s_.substr(start, 6));
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            fail_at(start, "the escape " + escape +
                               " is a low surrogate without a high "
                               "surrogate before it");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (i_ + 1 >= s_.size() || s_[i_] != '\\' || s_[i_ + 1] != 'u')
                fail_at(start, "the escape " + escape +
                                   " is a high surrogate without a low "
                                   "surrogate escape after it");
            const std::size_t low_start = i_;
            i_ += 2;
            const std::uint32_t low = read_hex4();
            if (low < 0xDC00 || low > 0xDFFF)
                fail_at(low_start, "the escape " + std::string(s_.substr(low_start, 6)) +
                                       " follows a high surrogate but is not a low surrogate "
                                       "(\\udc00 to \\udfff)");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        if (cp == 0)
            fail_at(start,
                    "the escape \\u0000 is not supported (as in jsonb, text cannot "
                    "hold a NUL byte)");
        append_utf8(out, cp);
    }

    // Reads a string whose opening quote is at s_[i_] and returns it decoded as UTF-8.
    std::string read_string() {
        ++i_;  // the opening quote
        std::string out;
        for (;;) {
            // Copy the run of plain bytes up to the next quote, backslash or special byte.
            const std::size_t run = i_;
            while (i_ < s_.size()) {
                const unsigned char c = static_cast<unsigned char>(s_[i_]);
                if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80)
                    break;
                ++i_;
            }
            out.append(s_.data() + run, i_ - run);
            if (i_ >= s_.size())
                fail("a closing double quote");
            const unsigned char c = static_cast<unsigned char>(s_[i_]);
            if (c == '"') {
                ++i_;
                return out;
            }
            if (c < 0x20)
                fail_at(i_, "a control character (byte 0x" + hex_byte(c) +
                                ") must be escaped in a string");
            if (c >= 0x80) {
                const std::size_t len = utf8_length(s_, i_);
                if (len == 0)
                    fail_at(i_,
                            "a string must be valid UTF-8, and the sequence starting "
                            "with byte 0x" +
                                hex_byte(c) + " is not");
                out.append(s_.data() + i_, len);
                i_ += len;
                continue;
            }
            // A backslash.
            if (i_ + 1 >= s_.size()) {
                ++i_;
                fail("an escape character after the backslash");
            }
            switch (s_[i_ + 1]) {
                case '"':
                    out += '"';
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '/':
                    out += '/';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u':
                    read_unicode_escape(out);
                    continue;
                default:
                    ++i_;
                    fail("one of \" \\ / b f n r t u after the backslash");
            }
            i_ += 2;
        }
    }

    // Reads an array whose '[' is at s_[i_]; depth counts it.
    Value read_array(int depth) {
        ++i_;
        Value v;
        v.kind = Kind::kArray;
        skip_ws();
        if (i_ < s_.size() && s_[i_] == ']') {
            ++i_;
            return v;
        }
        for (;;) {
            skip_ws();
            v.items.push_back(read_value(depth));
            skip_ws();
            if (i_ < s_.size() && s_[i_] == ',') {
                ++i_;
                continue;
            }
            if (i_ < s_.size() && s_[i_] == ']') {
                ++i_;
                return v;
            }
            fail("\",\" or \"]\" after an array element");
        }
    }

    // Reads an object whose '{' is at s_[i_]; depth counts it.
    Value read_object(int depth) {
        ++i_;
        Value v;
        v.kind = Kind::kObject;
        skip_ws();
        if (i_ < s_.size() && s_[i_] == '}') {
            ++i_;
            return v;
        }
        for (;;) {
            skip_ws();
            if (i_ >= s_.size() || s_[i_] != '"')
                fail("a string for a member name");
            std::string key = read_string();
            skip_ws();
            if (i_ >= s_.size() || s_[i_] != ':')
                fail("\":\" after a member name");
            ++i_;
            skip_ws();
            Value member = read_value(depth);
            v.members.emplace_back(std::move(key), std::move(member));
            skip_ws();
            if (i_ < s_.size() && s_[i_] == ',') {
                ++i_;
                continue;
            }
            if (i_ < s_.size() && s_[i_] == '}') {
                ++i_;
                return v;
            }
            fail("\",\" or \"}\" after an object member");
        }
    }

    std::string_view s_;
    std::size_t i_ = 0;
};

// Appends s to out as a JSON string: quotes, backslashes and control characters escaped,
// everything else (valid UTF-8, checked) as it is.
void write_string(std::string& out, std::string_view s) {
    out += '"';
    std::size_t i = 0;
    while (i < s.size()) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c >= 0x80) {
            const std::size_t len = utf8_length(s, i);
            if (len == 0)
                unwritable("String " + excerpt(s) + " is not valid UTF-8 at byte offset " +
                           std::to_string(i) + ".");
            out.append(s.data() + i, len);
            i += len;
            continue;
        }
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            case 0:
                unwritable("String " + excerpt(s) +
                           " holds a NUL byte, which JSON text read "
                           "by jsonb cannot carry.");
            default:
                if (c < 0x20)
                    out += "\\u00" + hex_byte(c);
                else
                    out += static_cast<char>(c);
        }
        ++i;
    }
    out += '"';
}

// Appends v to out as compact JSON; depth is how many arrays and objects enclose it.
void write_value(std::string& out, const Value& v, int depth) {
    switch (v.kind) {
        case Kind::kNull:
            out += "null";
            return;
        case Kind::kBoolean:
            out += v.b ? "true" : "false";
            return;
        case Kind::kNumber:
            if (!is_json_number(v.text))
                unwritable("Number text " + excerpt(v.text) + " is not a JSON number.");
            out += v.text;
            return;
        case Kind::kString:
            write_string(out, v.text);
            return;
        case Kind::kArray:
        case Kind::kObject:
            break;
    }
    if (depth >= kMaxDepth)
        unwritable("Arrays and objects nest at most " + std::to_string(kMaxDepth) +
                   " levels deep.");
    if (v.kind == Kind::kArray) {
        out += '[';
        for (std::size_t k = 0; k < v.items.size(); ++k) {
            if (k > 0)
                out += ',';
            write_value(out, v.items[k], depth + 1);
        }
        out += ']';
        return;
    }
    out += '{';
    for (std::size_t k = 0; k < v.members.size(); ++k) {
        if (k > 0)
            out += ',';
        write_string(out, v.members[k].first);
        out += ':';
        write_value(out, v.members[k].second, depth + 1);
    }
    out += '}';
}

}  // namespace

// Reads a JSON text with the Reader above.
Value parse(std::string_view text) {
    return Reader(text).read_text();
}

// Writes a value with write_value above.
std::string write(const Value& value) {
    std::string out;
    write_value(out, value, 0);
    return out;
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

// An integer is a valid number text with neither a fraction nor an exponent.
bool is_integer(const Value& value) {
    if (value.kind != Kind::kNumber || !is_json_number(value.text))
        return false;
    return value.text.find_first_of(".eE") == std::string::npos;
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
