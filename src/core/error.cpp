// Helpers that build the most common argument errors, so every entry point words them alike.
#include "core/error.hpp"

namespace baton {

void throw_null_argument(const char* argument, Where where) {
    throw Error(SqlState::kNullValueNotAllowed, std::string("argument \"") + argument + "\" must not be null",
                "The contract requires a value for this argument.", {}, where);
}

void throw_invalid_argument(const char* argument, std::string detail, Where where) {
    throw Error(SqlState::kInvalidParameterValue, std::string("invalid value for argument \"") + argument + "\"",
                std::move(detail), {}, where);
}

std::string clip(std::string_view text) {
    std::size_t n = text.size() <= 64 ? text.size() : 64;
    // Back up over continuation bytes (10xxxxxx) so the cut falls between characters.
    if (n < text.size())
        while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
    return std::string(text.substr(0, n));
}

void check_label(const char* argument, std::int64_t chars, Where where) {
    if (chars < 1 || chars > 200)
        throw_invalid_argument(argument,
                               std::string(argument) + " has 1 to 200 characters; this one has " +
                                   std::to_string(chars) + ".",
                               where);
}

}  // namespace baton
