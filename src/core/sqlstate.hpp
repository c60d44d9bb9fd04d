// The SQLSTATEs pg_baton raises: the contract's DU class and the standard codes it uses.
// Pure C++: the core names a code, the Postgres layer turns it into MAKE_SQLSTATE.
#pragma once
#ifdef POSTGRES_H
#error "core headers are included before postgres.h (its macros rename libc functions)"
#endif

namespace baton {

enum class SqlState {
    kNullValueNotAllowed,   // 22004: a required argument is NULL
    kInvalidParameterValue, // 22023: an argument is outside its documented limits
    kReadOnlyTransaction,   // 25006: a write function called on a standby or in a read-only transaction
    kInsufficientPrivilege, // 42501: no right to the object
    kUndefinedFunction,     // 42883: a function the object names no longer exists
    kLeaseLost,             // DU001: the generation no longer holds the row
    kTenantFenced,          // DU002: the tenant is not active, or does not exist
    kTransitionNotAllowed,  // DU003: a decision outside the allowed set, or malformed
    kCorruptHistory,        // DU004: a run's saved stages are inconsistent
    kTargetNotAuthorized,   // DU005: the caller is not a member of the target's role
    kDigestMismatch,        // DU006: an approval's digest differs from the inputs digest
    kInvalidState,          // DU007: the call is not valid in the object's state
    kNotFound,              // DU008: no such object in that tenant
    kDedupConflict,         // DU009: a key reused with a different payload or inputs
    kCheckViolation,        // 23514: a row written by direct SQL breaks a table's rule
    kObjectNotInPrerequisiteState,  // 55000: what a call needs is not there (distribute without Citus)
    kFeatureNotSupported,   // 0A000: a call where a distributed install cannot run it (inside a shard query)
    kSerializationFailure,  // 40001: the row changed under the call each time; call again
    kOutOfMemory,           // 53200: C++ allocation failed
    kInternal,              // XX000: a bug: an invariant of pg_baton's own code broke
};

// The five-character code of a state, e.g. "DU001".
constexpr const char* sqlstate_code(SqlState s) {
    switch (s) {
        case SqlState::kNullValueNotAllowed: return "22004";
        case SqlState::kInvalidParameterValue: return "22023";
        case SqlState::kReadOnlyTransaction: return "25006";
        case SqlState::kInsufficientPrivilege: return "42501";
        case SqlState::kUndefinedFunction: return "42883";
        case SqlState::kLeaseLost: return "DU001";
        case SqlState::kTenantFenced: return "DU002";
        case SqlState::kTransitionNotAllowed: return "DU003";
        case SqlState::kCorruptHistory: return "DU004";
        case SqlState::kTargetNotAuthorized: return "DU005";
        case SqlState::kDigestMismatch: return "DU006";
        case SqlState::kInvalidState: return "DU007";
        case SqlState::kNotFound: return "DU008";
        case SqlState::kDedupConflict: return "DU009";
        case SqlState::kCheckViolation: return "23514";
        case SqlState::kObjectNotInPrerequisiteState: return "55000";
        case SqlState::kFeatureNotSupported: return "0A000";
        case SqlState::kSerializationFailure: return "40001";
        case SqlState::kOutOfMemory: return "53200";
        case SqlState::kInternal: return "XX000";
    }
    return "XX000";
}

}  // namespace baton
