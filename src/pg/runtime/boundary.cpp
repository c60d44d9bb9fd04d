// The boundary between Postgres and C++ (see boundary.hpp).
#include "core/report.hpp"
#include "core/version.hpp"
#include "pg/runtime/boundary.hpp"
#include "pg/runtime/hooks.hpp"
#include "pg/runtime/owner.hpp"
#include "pg/runtime/schema_version.hpp"

namespace baton::pg {

namespace {

// The report being raised: static, so that building it cannot fail; ereport() copies it.
Report g_report;

// current_call(), and the last number given to a call.
std::uint64_t g_call = 0;
std::uint64_t g_calls = 0;

// MAKE_SQLSTATE from the five-character code of the core's catalogue.
int sqlstate_of(SqlState state) {
    const char* c = sqlstate_code(state);
    return MAKE_SQLSTATE(c[0], c[1], c[2], c[3], c[4]);
}

// Runs body, an older schema refused first (schema_version.hpp), and turns escaping
// exceptions into Postgres errors. With as_owner the body runs as the extension's owner
// (owner.hpp), as a SECURITY DEFINER function would; a Postgres error that longjmps past
// us leaves the switch to the transaction abort, which restores the user id (as fmgr.c
// does for SECURITY DEFINER functions). The registered enter and leave hooks (hooks.hpp)
// run around the body of such a call; what enter set is undone on every way out.
Datum run(FunctionCallInfo fcinfo, Body body, bool as_owner) {
    Oid saved_user = InvalidOid;
    int saved_context = 0;
    GetUserIdAndSecContext(&saved_user, &saved_context);
    ErrorData* pg_error = nullptr;
    const hooks::Hooks& hooks = hooks::installed();
    void* entered = nullptr;
    bool in_hooks = false;
    std::uint64_t caller_call = g_call;
    g_call = ++g_calls;
    try {
        if (!schema_version::current()) {
            const char* installed = guard([] { return schema_version::older_installed(); });
            if (installed != nullptr) version::require_not_older(installed, schema_version::library());
        }
        if (as_owner) {
            Oid owner = guard([] { return owner::of_extension(); });
            SetUserIdAndSecContext(owner, saved_context | SECURITY_LOCAL_USERID_CHANGE);
            if (hooks.enter != nullptr) {
                entered = hooks.enter(fcinfo);
                in_hooks = true;
            }
        }
        Datum result = body(fcinfo, saved_user);
        if (in_hooks) {
            in_hooks = false;
            hooks.leave(entered, false);
        }
        SetUserIdAndSecContext(saved_user, saved_context);
        g_call = caller_call;
        return result;
    } catch (const PgError& e) {
        pg_error = e.data();
    } catch (...) {
        describe_current_exception(g_report);
    }
    // Outside the catch blocks: the exception object is gone, nothing C++ is alive.
    if (in_hooks) hooks.leave(entered, true);
    SetUserIdAndSecContext(saved_user, saved_context);
    g_call = caller_call;
    if (pg_error != nullptr) ReThrowError(pg_error);
    // ereport() by hand, to give the report the place that raised it (its LOCATION):
    // a baton::Error's own, this function's for any other exception.
    if (errstart(ERROR, TEXTDOMAIN)) {
        errcode(sqlstate_of(g_report.state));
        errmsg_internal("%s", g_report.message);
        if (g_report.detail[0]) errdetail_internal("%s", g_report.detail);
        if (g_report.hint[0]) errhint("%s", g_report.hint);
        if (g_report.file != nullptr)
            errfinish(g_report.file, g_report.line, g_report.function);
        else
            errfinish(__FILE__, __LINE__, __func__);
    }
    pg_unreachable();
}

}  // namespace

const char* PgError::what() const noexcept {
    return data_ != nullptr && data_->message != nullptr ? data_->message : "postgres error";
}

ErrorData* try_postgres(void (*fn)(void*), void* arg) noexcept {
    MemoryContext cxt = CurrentMemoryContext;
    ErrorData* volatile error = nullptr;
    PG_TRY();
    { fn(arg); }
    PG_CATCH();
    {
        // CopyErrorData must not run in ErrorContext, where the error left us.
        MemoryContextSwitchTo(cxt);
        error = CopyErrorData();
        FlushErrorState();
    }
    PG_END_TRY();
    return error;
}

ErrorData* try_in_subtransaction(void (*fn)(void*), void* arg) {
    MemoryContext cxt = CurrentMemoryContext;
    ResourceOwner owner = CurrentResourceOwner;
    ErrorData* volatile error = nullptr;
    BeginInternalSubTransaction(nullptr);
    MemoryContextSwitchTo(cxt);
    PG_TRY();
    {
        fn(arg);
        ReleaseCurrentSubTransaction();
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(cxt);
        error = CopyErrorData();
        FlushErrorState();
        RollbackAndReleaseCurrentSubTransaction();
    }
    PG_END_TRY();
    MemoryContextSwitchTo(cxt);
    CurrentResourceOwner = owner;
    return error;
}

Datum entry(FunctionCallInfo fcinfo, Body body) { return run(fcinfo, body, true); }

Datum trigger_entry(FunctionCallInfo fcinfo, Body body) { return run(fcinfo, body, false); }

std::uint64_t current_call() { return g_call; }

}  // namespace baton::pg
