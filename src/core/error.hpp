// baton::Error: the one exception type the core throws. It carries a SQLSTATE, the
// three parts of a Postgres error report and the place that raised it; the boundary
// (src/pg/runtime/boundary.cpp) turns it into ereport(ERROR) at that place (the report's
// LOCATION) once the C++ stack has unwound.
#pragma once
#ifdef POSTGRES_H
#error "core headers are included before postgres.h (its macros rename libc functions)"
#endif

#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <utility>

#include "core/sqlstate.hpp"

namespace baton {

// A place in the source: by default (here()) the call that evaluates the default
// argument, so a function taking `Where where = Where::here()` learns its caller's place.
struct Where {
    const char* file;
    int line;
    const char* function;
    static constexpr Where here(const char* file = __builtin_FILE(), int line = __builtin_LINE(),
                                const char* function = __builtin_FUNCTION()) noexcept {
        return {file, line, function};
    }
};

class Error : public std::exception {
public:
    Error(SqlState state, std::string message, std::string detail = {}, std::string hint = {},
          Where where = Where::here())
        : state_(state),
          message_(std::move(message)),
          detail_(std::move(detail)),
          hint_(std::move(hint)),
          where_(where) {}

    SqlState state() const noexcept { return state_; }
    const char* code() const noexcept { return sqlstate_code(state_); }
    const std::string& message() const noexcept { return message_; }
    const std::string& detail() const noexcept { return detail_; }
    const std::string& hint() const noexcept { return hint_; }
    const Where& where() const noexcept { return where_; }
    const char* what() const noexcept override { return message_.c_str(); }

private:
    SqlState state_;
    std::string message_;
    std::string detail_;
    std::string hint_;
    Where where_;
};

// Throws 22004 naming the argument that must not be NULL (raised at where).
[[noreturn]] void throw_null_argument(const char* argument, Where where = Where::here());

// Throws 22023 with a message naming the argument and a detail saying what was expected
// (raised at where).
[[noreturn]] void throw_invalid_argument(const char* argument, std::string detail, Where where = Where::here());

// The first 64 bytes of a text for an error message, never cutting a UTF-8 character.
std::string clip(std::string_view text);

// Throws 22023 unless a name-like argument (a workflow, owner, approver, subject, step,
// kind, key...) has 1 to 200 characters.
void check_label(const char* argument, std::int64_t chars, Where where = Where::here());

}  // namespace baton
