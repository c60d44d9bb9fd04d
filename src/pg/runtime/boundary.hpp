// The boundary between Postgres and C++. Two directions, one rule: no C++ exception
// crosses a Postgres frame, and no Postgres error longjmps over a live C++ destructor.
//
//  * entry() wraps every SQL-callable function: it runs the C++ body inside try, and
//    turns whatever escapes into ereport(ERROR) after the catch block has ended.
//  * guard() wraps a call into Postgres made from C++ that holds objects with
//    destructors: it runs the call under PG_TRY, copies the error out, and throws it
//    as PgError, so the C++ stack unwinds normally; entry() re-throws it to Postgres
//    unchanged (same SQLSTATE, message, detail, context).
//
// Code between entry() and guard() therefore has two kinds of statements: plain C++
// (may throw baton::Error) and guarded Postgres calls. A lambda given to guard()
// contains only Postgres calls and trivially destructible locals.
#pragma once

#include <cstdint>
#include <exception>
#include <type_traits>

#include "pg/runtime/postgres.hpp"

namespace baton::pg {

// A Postgres error caught by guard(), carried through C++ frames.
class PgError final : public std::exception {
public:
    explicit PgError(ErrorData* data) noexcept : data_(data) {}
    ErrorData* data() const noexcept { return data_; }
    const char* what() const noexcept override;

private:
    ErrorData* data_;  // copied into the memory context that was current at guard()
};

// Runs fn(arg) under PG_TRY. Returns nullptr, or the Postgres error it raised, copied
// into the memory context that was current, with Postgres' error state cleared.
ErrorData* try_postgres(void (*fn)(void*), void* arg) noexcept;

// Runs f() (Postgres calls only) and returns its result; a Postgres error raised
// inside becomes a PgError exception.
template <typename F>
auto guard(F&& f) -> decltype(f()) {
    using Fn = std::remove_reference_t<F>;
    using R = decltype(f());
    if constexpr (std::is_void_v<R>) {
        auto thunk = [](void* p) { (*static_cast<Fn*>(p))(); };
        if (ErrorData* e = try_postgres(thunk, &f)) throw PgError(e);
    } else {
        static_assert(std::is_trivially_copyable_v<R>, "guard() returns plain values");
        struct Call {
            Fn* f;
            R result;
        } call{&f, R{}};
        auto thunk = [](void* p) {
            auto* c = static_cast<Call*>(p);
            c->result = (*c->f)();
        };
        if (ErrorData* e = try_postgres(thunk, &call)) throw PgError(e);
        return call.result;
    }
}

// Runs fn(arg) in a subtransaction: returns nullptr, or the Postgres error it raised,
// rolled back cleanly (locks, buffers, memory) and copied into the current context.
// Errors of the subtransaction machinery itself still longjmp (call it through guard).
ErrorData* try_in_subtransaction(void (*fn)(void*), void* arg);

// Runs f() (Postgres calls only) in a subtransaction and returns the Postgres error it
// raised, or nullptr: for input functions and catalog lookups whose failure pg_baton
// reports in its own words (22023) and then goes on.
template <typename F>
ErrorData* attempt(F&& f) {
    using Fn = std::remove_reference_t<F>;
    struct Call {
        Fn* f;
        ErrorData* error;
    } call{&f, nullptr};
    auto thunk = [](void* p) {
        auto* c = static_cast<Call*>(p);
        c->error = try_in_subtransaction([](void* q) { (*static_cast<Fn*>(q))(); }, c->f);
    };
    if (ErrorData* e = try_postgres(thunk, &call)) throw PgError(e);
    return call.error;
}

// The body of a SQL-callable function. `caller` is the role that called it, before
// the switch to the extension's owner.
using Body = Datum (*)(FunctionCallInfo fcinfo, Oid caller);

// Runs body as the extension's owner (like SECURITY DEFINER) and reports any exception
// as a Postgres error.
Datum entry(FunctionCallInfo fcinfo, Body body);

// Runs a trigger body as the current user and reports any exception as a Postgres error.
Datum trigger_entry(FunctionCallInfo fcinfo, Body body);

// The call of entry() or trigger_entry() running now: a number no other call of this
// backend had, 0 outside every call. A nested call (a trigger fired by a statement a
// call runs, a function that statement calls) has its own; when it returns, its caller's
// is current again. What a call sets up for itself alone is kept with this number.
std::uint64_t current_call();

}  // namespace baton::pg

// Declares the C symbol NAME, registered with Postgres, whose body is the C++ function BODY.
#define BATON_FUNCTION(NAME, BODY)                                                           \
    extern "C" {                                                                             \
    PG_FUNCTION_INFO_V1(NAME);                                                               \
    Datum NAME(PG_FUNCTION_ARGS) { return ::baton::pg::entry(fcinfo, BODY); }                \
    }

#define BATON_TRIGGER(NAME, BODY)                                                            \
    extern "C" {                                                                             \
    PG_FUNCTION_INFO_V1(NAME);                                                               \
    Datum NAME(PG_FUNCTION_ARGS) { return ::baton::pg::trigger_entry(fcinfo, BODY); }        \
    }
