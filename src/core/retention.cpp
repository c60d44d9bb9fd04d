// The argument rules of baton.purge (see retention.hpp).
#include "core/retention.hpp"

#include <string>

#include "core/error.hpp"

namespace baton::retention {

void check_purge_rows(std::int64_t max_rows) {
    if (max_rows < 1 || max_rows > kMaxPurgeRows)
        throw_invalid_argument("max_rows", "max_rows is between 1 and " + std::to_string(kMaxPurgeRows) +
                                               ", not " + std::to_string(max_rows) + ".");
}

void check_older_than(std::int32_t months, std::int32_t days, std::int64_t usec) {
    if (months < 0 || days < 0 || usec < 0)
        throw_invalid_argument("older_than",
                               "older_than is an age: zero or more in each of its months, days and time.");
}

}  // namespace baton::retention
