// Turns whatever C++ exception is in flight into the parts of a Postgres error report.
// The boundary calls it from its catch block; it is pure C++ so unit tests cover every
// kind of exception without a server.
#pragma once
#ifdef POSTGRES_H
#error "core headers are included before postgres.h (its macros rename libc functions)"
#endif

#include <cstddef>

#include "core/sqlstate.hpp"

namespace baton {

// A report in fixed buffers: building it allocates nothing, so it cannot fail while the
// process is out of memory. Longer texts are cut at a character boundary.
struct Report {
    static constexpr std::size_t kTextMax = 1024;
    SqlState state = SqlState::kInternal;
    char message[kTextMax] = {};
    char detail[kTextMax] = {};
    char hint[kTextMax] = {};
    // The place that raised it (a baton::Error's; file nullptr for any other exception).
    // The strings are the compiler's literals: static, never copied.
    const char* file = nullptr;
    int line = 0;
    const char* function = nullptr;
};

// Describes the exception being handled (call only inside a catch block):
// baton::Error keeps its SQLSTATE, texts and place; std::bad_alloc is 53200; any other
// std::exception or unknown object is XX000, an internal error of pg_baton.
void describe_current_exception(Report& out) noexcept;

// Copies src into dst (capacity cap, always terminated), never splitting a UTF-8 character.
void copy_text(char* dst, std::size_t cap, const char* src) noexcept;

}  // namespace baton
