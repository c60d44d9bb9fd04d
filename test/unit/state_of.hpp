// Shared by the unit tests: run a callable and report the baton::Error it threw, if any.
// Any other exception escapes, so GoogleTest reports it as a failure of its own.
#pragma once

#include <optional>
#include <ostream>
#include <utility>

#include "core/error.hpp"

namespace baton {

// Lets GoogleTest print a SqlState as its code ("22023") in failure messages.
inline void PrintTo(SqlState s, std::ostream* os) {
    *os << sqlstate_code(s);
}

namespace test {

// The Error thrown by f, or nullopt when f returns normally.
template <typename F>
std::optional<Error> error_of(F&& f) {
    try {
        std::forward<F>(f)();
    } catch (const Error& e) {
        return e;
    }
    return std::nullopt;
}

// The SQLSTATE of the Error thrown by f, or nullopt when f returns normally.
template <typename F>
std::optional<SqlState> state_of(F&& f) {
    if (auto e = error_of(std::forward<F>(f)))
        return e->state();
    return std::nullopt;
}

}  // namespace test
}  // namespace baton
