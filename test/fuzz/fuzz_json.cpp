// libFuzzer target: the JSON reader and writer (src/core/json.hpp), and the helpers that
// quote or cut outside text for error reports (json::excerpt, clip, copy_text).
//
// Properties, for any byte string:
//   - parse either returns a value or refuses with 22023 "invalid JSON text" (no other
//     exception, no crash);
//   - an accepted text holds only valid UTF-8 without NUL in its strings, and surrounding
//     JSON whitespace changes nothing;
//   - write(parse(x)) is accepted by write, parse reads it back as the same value, and
//     writing that again gives the same text (a fixed point after one round);
//   - as_int64 agrees with is_integer and with the decimal text of the number it returns;
//   - write of a string or a number built from the raw bytes (as the Postgres layer and
//     the tests build values) succeeds exactly when the bytes are valid UTF-8 without NUL
//     (a string) or a JSON number (a number), and then parse reads them back unchanged;
//   - excerpt, clip and copy_text give short, valid UTF-8 results of the documented
//     bounds from any input, never reading or writing out of bounds.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/json.hpp"
#include "core/report.hpp"
#include "fuzz_check.hpp"

namespace {

using baton::json::Kind;
using baton::json::Value;

// Walks an accepted value and checks what every accepted value must satisfy.
void check_value(const Value& v, int depth) {
    FUZZ_CHECK(depth <= baton::json::kMaxDepth, "accepted nesting deeper than kMaxDepth");
    switch (v.kind) {
        case Kind::kString:
            FUZZ_CHECK(fuzz::utf8_valid(v.text), "accepted string is not UTF-8");
            FUZZ_CHECK(v.text.find('\0') == std::string::npos, "accepted string holds NUL");
            break;
        case Kind::kNumber: {
            FUZZ_CHECK(!v.text.empty(), "accepted number has no text");
            const auto n = baton::json::as_int64(v);
            if (n) {
                FUZZ_CHECK(baton::json::is_integer(v), "as_int64 of a non-integer");
                const std::string back = std::to_string(*n);
                FUZZ_CHECK(back == v.text || (v.text == "-0" && *n == 0),
                           "as_int64 disagrees with the number's text");
            } else if (baton::json::is_integer(v)) {
                // An integer that does not fit: more than 18 digits.
                const std::size_t digits = v.text.size() - (v.text[0] == '-' ? 1 : 0);
                FUZZ_CHECK(digits >= 19, "as_int64 refused a small integer");
            }
            break;
        }
        case Kind::kArray:
            for (const Value& item : v.items)
                check_value(item, depth + 1);
            break;
        case Kind::kObject:
            for (const auto& m : v.members) {
                FUZZ_CHECK(fuzz::utf8_valid(m.first), "accepted key is not UTF-8");
                FUZZ_CHECK(m.first.find('\0') == std::string::npos, "accepted key holds NUL");
                check_value(m.second, depth + 1);
            }
            if (!v.members.empty()) {
                const Value* last = baton::json::find(v, v.members.back().first);
                FUZZ_CHECK(last == &v.members.back().second, "find does not take the last member");
            }
            break;
        case Kind::kNull:
        case Kind::kBoolean:
            break;
    }
}

// parse, with the only refusal allowed.
bool try_parse(std::string_view text, Value& out) {
    try {
        out = baton::json::parse(text);
        return true;
    } catch (const baton::Error& e) {
        fuzz::check_refusal(e, "22023", "invalid JSON text");
        return false;
    }
}

void check_json(std::string_view input) {
    Value v;
    if (!try_parse(input, v))
        return;
    check_value(v, 0);

    Value padded;
    const std::string ws = " \t\n\r" + std::string(input) + "\r\n\t ";
    FUZZ_CHECK(try_parse(ws, padded) && padded == v, "surrounding whitespace changed the value");

    std::string written;
    try {
        written = baton::json::write(v);
    } catch (const baton::Error&) {
        FUZZ_CHECK(false, "write refused a value that parse accepted");
    }
    Value again;
    FUZZ_CHECK(try_parse(written, again), "parse refused what write wrote");
    FUZZ_CHECK(again == v, "write then parse changed the value");
    FUZZ_CHECK(baton::json::write(again) == written, "write is not a fixed point");
    FUZZ_CHECK(written.size() <= input.size() * 6 + 2, "written text is far longer than input");
}

// write of values built by hand: refused unless writable, and then read back unchanged.
void check_built(std::string_view input) {
    const bool writable_string = fuzz::utf8_valid(input) && input.find('\0') == std::string::npos;
    std::string written;
    try {
        written = baton::json::write(baton::json::make_string(std::string(input)));
        FUZZ_CHECK(writable_string, "write accepted a string that is not UTF-8, or holds NUL");
        Value back;
        FUZZ_CHECK(try_parse(written, back), "parse refused a written string");
        FUZZ_CHECK(back.kind == Kind::kString && back.text == input, "a written string changed");
    } catch (const baton::Error& e) {
        FUZZ_CHECK(!writable_string, "write refused a valid string");
        FUZZ_CHECK(std::string_view(e.code()) == "22023", "write refused with the wrong SQLSTATE");
    }
    // A number: writable exactly when parse reads the same text as one number.
    Value parsed;
    const bool is_number =
        try_parse(input, parsed) && parsed.kind == Kind::kNumber && parsed.text == input;
    try {
        written = baton::json::write(baton::json::make_number(std::string(input)));
        FUZZ_CHECK(is_number, "write accepted a number text that is not a JSON number");
        FUZZ_CHECK(written == input, "a written number changed");
    } catch (const baton::Error& e) {
        FUZZ_CHECK(!is_number, "write refused a JSON number");
        FUZZ_CHECK(std::string_view(e.code()) == "22023", "write refused with the wrong SQLSTATE");
    }
}

// excerpt: quoted, valid UTF-8, printable, within its bound; a short plain text verbatim.
void check_excerpt(std::string_view s, std::size_t max_bytes) {
    const std::string out = baton::json::excerpt(s, max_bytes);
    FUZZ_CHECK(fuzz::utf8_valid(out), "excerpt is not UTF-8");
    FUZZ_CHECK(out.size() >= 2 && out[0] == '"', "excerpt is not quoted");
    FUZZ_CHECK(out.size() <= 6 * max_bytes + 5, "excerpt is longer than its bound");
    for (char c : out)
        FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20 && c != 0x7F,
                   "excerpt holds a control character");
    bool plain = s.size() <= max_bytes;
    for (char c : s)
        plain = plain && c >= 0x20 && c < 0x7F && c != '"' && c != '\\';
    if (plain)
        FUZZ_CHECK(out == "\"" + std::string(s) + "\"", "a short plain text was changed");
    const bool cut = out.size() >= 4 && out.compare(out.size() - 4, 4, "\"...") == 0;
    // Every character of s is at least one byte, so the text is cut exactly when it is
    // longer than the bound.
    FUZZ_CHECK(cut == (s.size() > max_bytes), "excerpt cut marker disagrees with the length");
}

// clip: a prefix of at most 64 bytes that cuts no character of a valid UTF-8 text.
void check_clip(std::string_view s) {
    const std::string out = baton::clip(s);
    FUZZ_CHECK(out.size() <= 64, "clip is longer than 64 bytes");
    FUZZ_CHECK(s.compare(0, out.size(), out) == 0, "clip is not a prefix");
    if (s.size() <= 64)
        FUZZ_CHECK(out == s, "clip changed a short text");
    if (fuzz::utf8_valid(s))
        FUZZ_CHECK(fuzz::utf8_valid(out), "clip cut a character");
}

// copy_text into a buffer of exactly cap bytes (ASan sees any overrun).
void check_copy_text(std::string_view s, std::size_t cap) {
    const std::string src(s.substr(0, s.find('\0')));
    std::unique_ptr<char[]> dst(new char[cap == 0 ? 1 : cap]);
    if (cap == 0) {
        baton::copy_text(dst.get(), 0, src.c_str());
        return;
    }
    baton::copy_text(dst.get(), cap, src.c_str());
    const std::size_t n = std::strlen(dst.get());
    FUZZ_CHECK(n < cap, "copy_text overran its capacity");
    FUZZ_CHECK(src.compare(0, n, dst.get()) == 0, "copy_text is not a prefix");
    if (src.size() < cap)
        FUZZ_CHECK(n == src.size(), "copy_text cut a text that fits");
    if (fuzz::utf8_valid(src))
        FUZZ_CHECK(fuzz::utf8_valid(std::string_view(dst.get(), n)), "copy_text cut a character");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    check_json(input);
    check_built(input);
    const std::size_t bound = size == 0 ? 0 : data[0] % 80;
    check_excerpt(input, bound);
    check_excerpt(input, 64);
    check_clip(input);
    check_copy_text(input, bound);
    return 0;
}
