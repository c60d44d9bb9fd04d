// Shared helpers of the libFuzzer targets (test/fuzz/fuzz_*.cpp).
//
// FUZZ_CHECK(cond, what) aborts with a message when a property fails, so libFuzzer saves
// the input as a crash artifact. check_refusal() checks that a refusal is the documented
// baton::Error (state and message), never another exception. utf8_valid() is an independent UTF-8 checker (RFC 3629), deliberately not the
// one in src/core, so the two can disagree.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/error.hpp"

#define FUZZ_CHECK(cond, what)                                                            \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            std::fprintf(stderr, "FUZZ PROPERTY FAILED at %s:%d: %s\n  (%s)\n", __FILE__, \
                         __LINE__, (what), #cond);                                        \
            std::abort();                                                                 \
        }                                                                                 \
    } while (0)

namespace fuzz {

// Checks that a refusal is a baton::Error with this SQLSTATE and a message that starts
// with `message` (or ends with it, when suffix is true).
inline void check_refusal(const baton::Error& e, const char* code, std::string_view message,
                          bool suffix = false) {
    FUZZ_CHECK(std::string_view(e.code()) == code, "refusal has the wrong SQLSTATE");
    const std::string& m = e.message();
    const bool ok = suffix ? (m.size() >= message.size() &&
                              m.compare(m.size() - message.size(), message.size(), message) == 0)
                           : m.compare(0, message.size(), message) == 0;
    FUZZ_CHECK(ok, "refusal has the wrong message");
    FUZZ_CHECK(!e.detail().empty(), "refusal has no detail");
}

// RFC 3629 UTF-8, decoded the long way: no overlong forms, no surrogates, at most U+10FFFF.
inline bool utf8_valid(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        std::size_t len;
        unsigned long cp;
        if (c < 0x80) {
            ++i;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (i + len > s.size())
            return false;
        for (std::size_t k = 1; k < len; ++k) {
            const unsigned char d = static_cast<unsigned char>(s[i + k]);
            if ((d & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (d & 0x3F);
        }
        const unsigned long min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

}  // namespace fuzz
