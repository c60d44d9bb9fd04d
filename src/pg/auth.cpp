// Authorization of bound targets (see auth.hpp).
#include <string>

#include "core/error.hpp"
#include "pg/auth.hpp"

namespace baton::pg::auth {

void require_member(Oid caller, Oid role, std::string_view target) {
    if (role == InvalidOid) return;
    if (guard([caller, role] { return is_member_of_role(caller, role); })) return;
    const char* caller_name = guard([caller] { return GetUserNameFromId(caller, true); });
    const char* role_name = guard([role] { return GetUserNameFromId(role, true); });
    throw Error(SqlState::kTargetNotAuthorized,
                "role \"" + std::string(caller_name ? caller_name : "?") + "\" may not work on target \"" +
                    std::string(target) + "\"",
                "The target is bound to role \"" + std::string(role_name ? role_name : "?") +
                    "\", and the caller is not a member of it.",
                "An admin grants membership in that role, or binds the target with baton.bind_target().");
}

void require_role_exists(Oid role) {
    if (guard([role] { return SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(role)); })) return;
    throw_invalid_argument("role", "No role has OID " + std::to_string(role) + ".");
}

}  // namespace baton::pg::auth
