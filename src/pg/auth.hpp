// Authorization of bound targets: only members of the role bound to a target work on
// its deliveries.
#pragma once

#include <string_view>

#include "pg/boundary.hpp"

namespace baton::pg::auth {

// Throws DU005 unless caller is a member of role (superusers are members of every role).
// role == InvalidOid means the target is not bound: everyone granted the function may act.
void require_member(Oid caller, Oid role, std::string_view target);

// Throws 22023 unless role names an existing role.
void require_role_exists(Oid role);

}  // namespace baton::pg::auth
