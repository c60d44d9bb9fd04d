// libFuzzer target: the core's JSON values (src/core/json.hpp) and the helpers that
// quote or cut outside text for error reports (json::excerpt, clip, copy_text).
//
// Properties, for any byte string:
//   - the tests' lenient reader (test/unit/json_text.hpp) makes a tree of it or refuses
//     it with std::invalid_argument, or std::length_error past json::kMaxDepth levels;
//   - on a tree: as_int64 agrees with is_integer and with the decimal text of the number
//     it returns; find takes the last member of a repeated key; equality is reflexive;
//   - nesting_offset finds nothing in a text the reader took, and in a text it refused
//     as too deep points at the bracket that opens level kMaxDepth + 1;
//   - excerpt, clip and copy_text give short, valid UTF-8 results of the documented
//     bounds from any input, never reading or writing out of bounds.
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/json.hpp"
#include "core/report.hpp"
#include "fuzz_check.hpp"
#include "json_text.hpp"

namespace {

using baton::json::Kind;
using baton::json::Value;

// Walks a tree and checks what the helpers promise of every value.
void check_value(const Value& v, int depth) {
    FUZZ_CHECK(depth <= baton::json::kMaxDepth, "accepted nesting deeper than kMaxDepth");
    switch (v.kind) {
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
            for (const auto& m : v.members)
                check_value(m.second, depth + 1);
            if (!v.members.empty()) {
                const Value* last = baton::json::find(v, v.members.back().first);
                FUZZ_CHECK(last == &v.members.back().second, "find does not take the last member");
            }
            break;
        case Kind::kNull:
        case Kind::kBoolean:
        case Kind::kString:
            break;
    }
    FUZZ_CHECK(v == v, "a value differs from itself");
}

// The tree of the input, when the reader makes one; then the nesting offset agrees.
void check_tree(std::string_view input) {
    Value v;
    try {
        v = baton::test::json_of(input);
    } catch (const std::length_error&) {
        const std::size_t at = baton::json::nesting_offset(input);
        FUZZ_CHECK(at != std::string_view::npos, "nesting_offset missed a text nested too deep");
        FUZZ_CHECK(input[at] == '[' || input[at] == '{', "nesting_offset points at no bracket");
        return;
    } catch (const std::invalid_argument&) {
        return;
    }
    check_value(v, 0);
    FUZZ_CHECK(baton::json::nesting_offset(input) == std::string_view::npos,
               "nesting_offset found a level too deep in a text the reader took");
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
    check_tree(input);
    const std::size_t bound = size == 0 ? 0 : data[0] % 80;
    check_excerpt(input, bound);
    check_excerpt(input, 64);
    check_clip(input);
    check_copy_text(input, bound);
    return 0;
}
