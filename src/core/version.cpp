// Versions of the extension (see version.hpp).
#include "core/version.hpp"

#include <string>

namespace baton::version {

namespace {

// The part of `v` from `at` up to the next dot, and `at` moved past that dot.
std::string_view next_part(std::string_view v, std::size_t& at) {
    if (at >= v.size()) return {};
    std::size_t dot = v.find('.', at);
    std::size_t end = dot == std::string_view::npos ? v.size() : dot;
    std::string_view part = v.substr(at, end - at);
    at = end == v.size() ? v.size() : end + 1;
    return part;
}

// A part's leading digits (their number, leading zeros ignored) and the rest.
struct Part {
    std::string_view digits, rest;
};
Part split(std::string_view part) {
    std::size_t n = 0;
    while (n < part.size() && part[n] >= '0' && part[n] <= '9') n++;
    std::string_view digits = part.substr(0, n);
    while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
    return {digits, part.substr(n)};
}

}  // namespace

int compare(std::string_view a, std::string_view b) {
    std::size_t i = 0, j = 0;
    while (i < a.size() || j < b.size()) {
        Part x = split(next_part(a, i)), y = split(next_part(b, j));
        std::string_view xd = x.digits.empty() ? "0" : x.digits, yd = y.digits.empty() ? "0" : y.digits;
        if (xd.size() != yd.size()) return xd.size() < yd.size() ? -1 : 1;
        if (int c = xd.compare(yd)) return c < 0 ? -1 : 1;
        if (int c = x.rest.compare(y.rest)) return c < 0 ? -1 : 1;
    }
    return 0;
}

void require_not_older(std::string_view installed, std::string_view library) {
    if (compare(installed, library) >= 0) return;
    throw Error(SqlState::kObjectNotInPrerequisiteState,
                "extension \"pg_baton\" is installed at version " + std::string(installed) +
                    ", older than its library's version " + std::string(library),
                "The library pg_baton serves the schema of its own version only; the schema of this database "
                "has not been updated to it.",
                "Run ALTER EXTENSION pg_baton UPDATE in this database.");
}

}  // namespace baton::version
