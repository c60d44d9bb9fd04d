// The extension's versions and the one rule the library keeps about them: it serves the
// schema of the version it was built for, not an older one. Free of Postgres.
#pragma once
#ifdef POSTGRES_H
#error "core headers are included before postgres.h (its macros rename libc functions)"
#endif

#include <string_view>

#include "core/error.hpp"

namespace baton::version {

// Orders two versions as "0.9.0" < "0.10.0": dot-separated parts compared as numbers
// (their leading digits), then by the rest of a part as text; a missing part counts
// as 0. Negative, zero or positive, as a comes before, equals or follows b.
int compare(std::string_view a, std::string_view b);

// 55000 when the schema installed (pg_extension.extversion) is older than the library's
// version: the message names both, the hint says how to update.
void require_not_older(std::string_view installed, std::string_view library);

}  // namespace baton::version
