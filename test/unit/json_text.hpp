// Builds the core's JSON trees from JSON text, for the unit tests only.
//
// The server never parses JSON text in pg_baton: src/pg/runtime/jsonb.cpp walks jsonb into
// json::Value. The tests write their definitions and decisions as text, and this small
// reader turns it into the same tree: numbers keep their text, strings are decoded
// (escapes and surrogate pairs to UTF-8), members stay in order, duplicates included.
// Arrays and objects nest at most json::kMaxDepth levels, as in trees read from jsonb.
// It judges no more than it must (strings are taken as the bytes they are, number texts
// as written), so the fuzz targets (test/fuzz) use it too, to make trees of any shape
// from their inputs. It throws std::invalid_argument on text it cannot read, and
// std::length_error on text nested too deep.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/json.hpp"

namespace baton::test {

namespace detail {

// A recursive-descent reader over one text.
class JsonText {
public:
    explicit JsonText(std::string_view s) : s_(s) {}

    // Reads the text's one value; nothing but whitespace may follow it.
    json::Value read() {
        json::Value v = value();
        ws();
        if (i_ != s_.size()) fail();
        return v;
    }

private:
    [[noreturn]] void fail() const {
        throw std::invalid_argument("json_of: cannot read the text at byte " + std::to_string(i_));
    }
    // Skips whitespace, then reads c or fails.
    void expect(char c) {
        ws();
        if (i_ >= s_.size() || s_[i_] != c) fail();
        ++i_;
    }
    // Skips whitespace and reports whether c comes next (consuming it).
    bool next_is(char c) {
        ws();
        if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
        return false;
    }
    void ws() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
    }
    // Any value: the first byte says which.
    json::Value value() {
        ws();
        if (i_ >= s_.size()) fail();
        const char c = s_[i_];
        if (c == '{' || c == '[') {
            if (depth_ == json::kMaxDepth) throw std::length_error("json_of: nested deeper than json::kMaxDepth");
            ++depth_;
            json::Value v = container(c == '{');
            --depth_;
            return v;
        }
        if (c == '"') return json::make_string(string());
        for (const char* word : {"true", "false", "null"})
            if (s_.compare(i_, std::string_view(word).size(), word) == 0) {
                i_ += std::string_view(word).size();
                return word[0] == 'n' ? json::make_null() : json::make_bool(word[0] == 't');
            }
        const std::size_t start = i_;
        while (i_ < s_.size() && std::string_view("+-.0123456789eE").find(s_[i_]) != std::string_view::npos) ++i_;
        if (i_ == start) fail();
        return json::make_number(std::string(s_.substr(start, i_ - start)));
    }
    // An object or an array whose opening bracket is at s_[i_].
    json::Value container(bool object) {
        ++i_;
        json::Value v = object ? json::make_object({}) : json::make_array({});
        if (next_is(object ? '}' : ']')) return v;
        do {
            if (object) {
                ws();
                std::string key = string();
                expect(':');
                v.members.emplace_back(std::move(key), value());
            } else {
                v.items.push_back(value());
            }
        } while (next_is(','));
        expect(object ? '}' : ']');
        return v;
    }
    // Four hex digits.
    std::uint32_t hex4() {
        if (i_ + 4 > s_.size()) fail();
        std::uint32_t cp = 0;
        for (char c : s_.substr(i_, 4)) {
            const char lower = c >= 'A' && c <= 'F' ? static_cast<char>(c - 'A' + 'a') : c;
            const std::size_t d = std::string_view("0123456789abcdef").find(lower);
            if (d == std::string_view::npos) fail();
            cp = cp * 16 + static_cast<std::uint32_t>(d);
        }
        i_ += 4;
        return cp;
    }
    // A string whose opening quote is at s_[i_], decoded to UTF-8.
    std::string string() {
        if (i_ >= s_.size() || s_[i_] != '"') fail();
        ++i_;
        std::string out;
        while (i_ < s_.size() && s_[i_] != '"') {
            if (s_[i_] != '\\') {
                out += s_[i_++];
                continue;
            }
            if (++i_ >= s_.size()) fail();
            const char e = s_[i_++];
            const std::string_view from = "\"\\/bfnrt", to = "\"\\/\b\f\n\r\t";
            if (e != 'u') {
                if (from.find(e) == std::string_view::npos) fail();
                out += to[from.find(e)];
                continue;
            }
            std::uint32_t cp = hex4();
            if (cp >= 0xD800 && cp <= 0xDBFF && s_.compare(i_, 2, "\\u") == 0) {
                i_ += 2;
                const std::uint32_t low = hex4();
                if (low < 0xDC00 || low > 0xDFFF) fail();
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            }
            utf8(out, cp);
        }
        if (i_ >= s_.size()) fail();
        ++i_;
        return out;
    }
    // Appends the UTF-8 encoding of a code point.
    static void utf8(std::string& out, std::uint32_t cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
            return;
        }
        const int n = cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        out += static_cast<char>((0xF00 >> n) | (cp >> (6 * (n - 1))));
        for (int k = n - 2; k >= 0; --k) out += static_cast<char>(0x80 | ((cp >> (6 * k)) & 0x3F));
    }

    std::string_view s_;
    std::size_t i_ = 0;
    int depth_ = 0;
};

}  // namespace detail

// The tree of a JSON text (std::invalid_argument when it cannot be read).
inline json::Value json_of(std::string_view text) {
    return detail::JsonText(text).read();
}

}  // namespace baton::test
