// Classification of in-flight exceptions (see report.hpp).
#include "core/report.hpp"

#include <cstring>
#include <exception>
#include <new>

#include "core/error.hpp"

namespace baton {

void copy_text(char* dst, std::size_t cap, const char* src) noexcept {
    if (cap == 0) return;
    std::size_t n = src ? std::strlen(src) : 0;
    if (n >= cap) {
        n = cap - 1;
        // Back up over UTF-8 continuation bytes so no character is cut in half.
        while (n > 0 && (static_cast<unsigned char>(src[n]) & 0xC0) == 0x80) --n;
    }
    if (n > 0) std::memcpy(dst, src, n);
    dst[n] = '\0';
}

void describe_current_exception(Report& out) noexcept {
    out.detail[0] = out.hint[0] = '\0';
    out.file = out.function = nullptr;
    out.line = 0;
    try {
        throw;
    } catch (const Error& e) {
        out.state = e.state();
        copy_text(out.message, sizeof out.message, e.message().c_str());
        copy_text(out.detail, sizeof out.detail, e.detail().c_str());
        copy_text(out.hint, sizeof out.hint, e.hint().c_str());
        out.file = e.where().file;
        out.line = e.where().line;
        out.function = e.where().function;
    } catch (const std::bad_alloc&) {
        out.state = SqlState::kOutOfMemory;
        copy_text(out.message, sizeof out.message, "out of memory in pg_baton");
        copy_text(out.detail, sizeof out.detail, "A C++ allocation failed.");
    } catch (const std::exception& e) {
        out.state = SqlState::kInternal;
        copy_text(out.message, sizeof out.message, "internal error in pg_baton");
        copy_text(out.detail, sizeof out.detail, e.what());
    } catch (...) {
        out.state = SqlState::kInternal;
        copy_text(out.message, sizeof out.message, "internal error in pg_baton");
        copy_text(out.detail, sizeof out.detail, "An exception of unknown type reached the boundary.");
    }
}

}  // namespace baton
