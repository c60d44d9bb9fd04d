// Authorization of bound targets: only members of the role bound to a target work on
// its deliveries. The binding is written by pg/stores/binding_store and read with the
// delivery (the delivery store returns each row's bound role).
#pragma once

#include <string_view>

#include "pg/runtime/spi.hpp"

namespace baton::pg::auth {

// Throws DU005 unless caller is a member of role (superusers are members of every role).
// role == InvalidOid means the target is not bound: everyone granted the function may act.
void require_member(Oid caller, Oid role, std::string_view target);

// The role a binding names, as this node knows it: `name` is the binding's role as text
// (regrole's output, an identifier quoted where needed), read on the node of the binding's
// shard, where target_bindings.role holds that node's oid; Citus creates a role on every
// node under one name, not one oid. nullptr (no binding) is InvalidOid; a name no role of
// this node has (a dropped role prints as its old oid) is an oid that is no role's, so
// that require_member() refuses everyone but superusers, as it does on one node for a
// bound role dropped since.
Oid role_named(const char* name);

// Throws 22023 unless role names an existing role.
void require_role_exists(Oid role);

// Grants role USAGE on schema baton and EXECUTE on the functions of schema baton named
// in `names` (comma-separated, unqualified) that the installed version has.
void grant(Oid role, const char* names);
// Grants role USAGE on schema baton, EXECUTE on every function of the schema but the
// grant_* helpers and the trigger functions, and SELECT on every view; both read from
// the catalog, so that a function or view added later cannot be forgotten.
void grant_admin(Oid role);

}  // namespace baton::pg::auth
