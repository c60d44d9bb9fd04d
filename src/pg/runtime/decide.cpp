// A workflow's decide function (see decide.hpp).
#include <optional>
#include <string>

#include "core/error.hpp"
#include "core/json.hpp"
#include "pg/runtime/decide.hpp"

namespace baton::pg::decide {

namespace {

// Refuses the decide name of a definition (22023), with a detail naming the fault.
[[noreturn]] void invalid(std::string detail) {
    throw Error(SqlState::kInvalidParameterValue, "invalid decide function", std::move(detail));
}

}  // namespace

// What keeps function fn from serving as a decide function (a sentence's end after its
// name), or nullopt: it must be a plain function returning one jsonb.
std::optional<std::string> shape_fault(Oid fn) {
    char prokind = guard([fn] { return get_func_prokind(fn); });
    if (prokind != PROKIND_FUNCTION)
        return std::string(" must be a plain function, not ") +
               (prokind == PROKIND_AGGREGATE ? "an aggregate"
                : prokind == PROKIND_WINDOW  ? "a window function"
                                             : "a procedure") +
               ".";
    Oid rettype = guard([fn] { return get_func_rettype(fn); });
    bool retset = guard([fn] { return get_func_retset(fn); });
    if (rettype != JSONBOID || retset) return std::string(" must return a single jsonb.");
    return std::nullopt;
}

// Looks the name up as name(jsonb), in a subtransaction: a malformed name or a missing
// schema is "no such function" here, not an error of the lookup. Then its kind and type.
Oid resolve(const std::string& name) {
    const char* cname = name.c_str();
    Oid fn = InvalidOid;
    if (attempt([cname, &fn] {
            List* names = BATON_QUALIFIED_NAME_LIST(cname);
            Oid argtypes[1] = {JSONBOID};
            fn = LookupFuncName(names, 1, argtypes, true);
        }) != nullptr)
        fn = InvalidOid;
    if (fn == InvalidOid)
        invalid("decide names " + json::excerpt(name) + ", but no function " + json::excerpt(name) + "(jsonb) exists.");
    if (std::optional<std::string> fault = shape_fault(fn)) invalid("decide function " + json::excerpt(name) + *fault);
    return fn;
}

// Checks that the function still exists and that the caller may execute it, then calls
// it through fmgr with the user id switched to the caller for the call alone (after an
// error, entry() restores the user id).
Jsonb* call(Oid fn, const std::string& name, Oid caller, Datum context) {
    if (!guard([fn] { return SearchSysCacheExists1(PROCOID, ObjectIdGetDatum(fn)); }))
        throw Error(SqlState::kUndefinedFunction, "decide function \"" + name + "\" of the workflow no longer exists",
                    "It was dropped or renamed after the workflow version was defined, which names it by "
                    "its signature (baton.workflows.decide).",
                    "Create the function again under that signature, and the run goes on from its stage; "
                    "or define the workflow again.");
    // Found by its signature, it may have been created again with another result.
    if (std::optional<std::string> fault = shape_fault(fn))
        throw Error(SqlState::kUndefinedFunction,
                    "decide function \"" + name + "\" of the workflow" + fault->substr(0, fault->size() - 1),
                    "The function the workflow version names by its signature (baton.workflows.decide) was "
                    "created again with another kind or result.",
                    "Create it again as a function (jsonb) RETURNS jsonb, or define the workflow again.");
    bool allowed = guard([fn, caller] { return BATON_PROC_ACLCHECK(fn, caller, ACL_EXECUTE) == ACLCHECK_OK; });
    if (!allowed) {
        const char* role = guard([caller] { return GetUserNameFromId(caller, true); });
        throw Error(SqlState::kInsufficientPrivilege,
                    "permission denied for role \"" + std::string(role ? role : "?") +
                        "\" to execute decide function \"" + name + "\"",
                    "transition_stage calls it as the calling role, which needs EXECUTE on it.");
    }
    return guard([fn, caller, context]() -> Jsonb* {
        Oid saved_user;
        int saved_context;
        GetUserIdAndSecContext(&saved_user, &saved_context);
        SetUserIdAndSecContext(caller, saved_context);
        FmgrInfo flinfo;
        fmgr_info(fn, &flinfo);
        LOCAL_FCINFO(fc, 1);
        InitFunctionCallInfoData(*fc, &flinfo, 1, InvalidOid, nullptr, nullptr);
        fc->args[0].value = context;
        fc->args[0].isnull = false;
        Datum result = FunctionCallInvoke(fc);
        SetUserIdAndSecContext(saved_user, saved_context);
        return fc->isnull ? nullptr : DatumGetJsonbP(result);
    });
}

}  // namespace baton::pg::decide
