// Authorization of bound targets (see auth.hpp).
#include <string>

#include "core/error.hpp"
#include "pg/access/auth.hpp"

namespace baton::pg::auth {

namespace {

// Every function of the schema an admin gets.
constexpr const char* kAdminFunctions =
    "SELECT pg_catalog.string_agg(p.oid::pg_catalog.regprocedure::pg_catalog.text, ', ') "
    "FROM pg_catalog.pg_proc p WHERE p.pronamespace OPERATOR(pg_catalog.=) "
    "'baton'::pg_catalog.regnamespace "
    "AND p.prorettype OPERATOR(pg_catalog.<>) 'pg_catalog.trigger'::pg_catalog.regtype "
    "AND NOT p.proname OPERATOR(pg_catalog.~~) 'grant\\_%'";
// The functions of the schema with one of the names that follow, as an array literal's
// elements; closed by the caller.
constexpr const char* kNamedFunctions =
    "SELECT pg_catalog.string_agg(p.oid::pg_catalog.regprocedure::pg_catalog.text, ', ') "
    "FROM pg_catalog.pg_proc p WHERE p.pronamespace OPERATOR(pg_catalog.=) "
    "'baton'::pg_catalog.regnamespace AND p.proname OPERATOR(pg_catalog.=) ANY ('{";
// Every view of the schema.
constexpr const char* kAdminViews =
    "SELECT pg_catalog.string_agg(c.oid::pg_catalog.regclass::pg_catalog.text, ', ') "
    "FROM pg_catalog.pg_class c WHERE c.relnamespace OPERATOR(pg_catalog.=) "
    "'baton'::pg_catalog.regnamespace AND c.relkind OPERATOR(pg_catalog.=) 'v'";

// Runs GRANT USAGE, GRANT EXECUTE on `functions` and, when `views` is not nullptr,
// GRANT SELECT on them, to role.
void run_grants(Spi& spi, Oid role, const char* functions, const char* views) {
    const char* name = guard([role] { return quote_identifier(GetUserNameFromId(role, false)); });
    std::string to = std::string(" TO ") + name;
    spi.exec(("GRANT USAGE ON SCHEMA baton" + to).c_str());
    spi.exec((std::string("GRANT EXECUTE ON FUNCTION ") + functions + to).c_str());
    if (views) spi.exec((std::string("GRANT SELECT ON ") + views + to).c_str());
}

}  // namespace

// Members of role, and superusers, pass; everyone passes an unbound target.

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

// The name parsed as regrole's input parses it (quotes and case), then looked up without
// error; pg_authid's own relation id stands for "no such role": fixed oids are unique
// across the catalogs, so no role ever has it.
Oid role_named(const char* name) {
    if (name == nullptr) return InvalidOid;
    Oid role = guard([name] {
        List* names = BATON_QUALIFIED_NAME_LIST(name);
        return list_length(names) == 1 ? get_role_oid(strVal(linitial(names)), true) : InvalidOid;
    });
    return OidIsValid(role) ? role : AuthIdRelationId;
}

// A syscache probe of pg_authid.
void require_role_exists(Oid role) {
    if (guard([role] { return SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(role)); })) return;
    throw_invalid_argument("role", "No role has OID " + std::to_string(role) + ".");
}

// A list the caller names, read from the catalog first (their signatures, for the GRANT).
void grant(Oid role, const char* names) {
    Spi spi;
    spi.exec((std::string(kNamedFunctions) + names + "}'::pg_catalog.name[])").c_str());
    const char* functions = spi.cstring_at(0, 1);
    if (functions == nullptr) throw Error(SqlState::kInternal, "pg_baton found none of its functions");
    run_grants(spi, role, functions, nullptr);
}

// The lists read from the catalog first (copied: the grants run statements of their own).
void grant_admin(Oid role) {
    Spi spi;
    spi.exec(kAdminFunctions);
    const char* functions = spi.cstring_at(0, 1);
    if (functions == nullptr) throw Error(SqlState::kInternal, "pg_baton found none of its functions");
    spi.exec(kAdminViews);
    const char* views = spi.cstring_at(0, 1);
    run_grants(spi, role, functions, views);
}

}  // namespace baton::pg::auth
