// How a restore gets past the fence (see restore_load.hpp).
#include "pg/restore_load.hpp"

#include "pg/boundary.hpp"

namespace baton::pg::restore_load {

namespace {

// The CopyStmt of the portal the client is running, if it is a COPY ... FROM of a table
// (not of a query); nullptr otherwise. A statement run through SPI or from a function
// leaves ActivePortal at the client's statement, so it is never mistaken for the COPY.
CopyStmt* top_level_copy_from() {
    Portal portal = ActivePortal;
    if (portal == nullptr || portal->commandTag != CMDTAG_COPY || list_length(portal->stmts) != 1) return nullptr;
    Node* stmt = static_cast<Node*>(linitial(portal->stmts));
    if (!IsA(stmt, PlannedStmt)) return nullptr;
    Node* utility = reinterpret_cast<PlannedStmt*>(stmt)->utilityStmt;
    if (utility == nullptr || !IsA(utility, CopyStmt)) return nullptr;
    auto* copy = reinterpret_cast<CopyStmt*>(utility);
    return copy->is_from && copy->relation != nullptr && copy->query == nullptr ? copy : nullptr;
}

}  // namespace

bool active(Relation rel) {
    // Checked first and without a call into Postgres: the fence trigger asks on every row
    // of every write, and only COPY statements go further.
    if (ActivePortal == nullptr || ActivePortal->commandTag != CMDTAG_COPY) return false;
    return guard([rel] {
        CopyStmt* copy = top_level_copy_from();
        if (copy == nullptr) return false;
        // The COPY has opened its table already: resolving its name again finds the same
        // relation, without a lock of its own.
        Oid target = RangeVarGetRelid(copy->relation, NoLock, true);
        return target == RelationGetRelid(rel) && has_privs_of_role(GetUserId(), rel->rd_rel->relowner);
    });
}

}  // namespace baton::pg::restore_load
