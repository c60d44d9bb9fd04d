// How a restore gets past the fence, and only a restore (see restore_load.hpp).
#include "pg/access/restore_load.hpp"

#include <cstdint>

#include "pg/runtime/boundary.hpp"
#include "pg/runtime/cache.hpp"
#include "pg/runtime/locks.hpp"
#include "pg/runtime/owner.hpp"
#include "pg/runtime/spi.hpp"

namespace baton::pg::restore_load {

namespace {

// baton.in_use's oid once this backend has seen or written its row: the database is in
// use, for good (the row is never removed). Forgotten when the relation is invalidated
// (a DROP EXTENSION; a new CREATE EXTENSION makes a new, empty table) or on a reset.
cache::Value<Oid> g_in_use_relid;


KeptPlan g_in_use_row = {"SELECT 1 FROM baton.in_use", 0, {}, nullptr};
KeptPlan g_add_in_use_row = {"INSERT INTO baton.in_use DEFAULT VALUES ON CONFLICT DO NOTHING", 0, {}, nullptr};

// baton.in_use's oid (InvalidOid when it is missing).
Oid in_use_relid() {
    return guard([] {
        Oid nsp = get_namespace_oid("baton", true);
        return OidIsValid(nsp) ? get_relname_relid("in_use", nsp) : InvalidOid;
    });
}

// Runs plan as the extension's owner (owner.hpp): the fence asks for every role that
// writes, including roles (and triggers) with no privilege on baton.in_use. latest:
// read the latest committed data rather than the snapshot. Returns the row count.
std::uint64_t run_as_owner(KeptPlan& plan, bool latest) {
    Oid owner = guard([] { return owner::of_extension(); });
    Oid saved_user = InvalidOid;
    int saved_context = 0;
    GetUserIdAndSecContext(&saved_user, &saved_context);
    SetUserIdAndSecContext(owner, saved_context | SECURITY_LOCAL_USERID_CHANGE);
    std::uint64_t rows = 0;
    try {
        Spi spi;
        rows = latest ? spi.run_latest(plan, nullptr, nullptr) : spi.run(plan, nullptr, nullptr);
    } catch (...) {
        SetUserIdAndSecContext(saved_user, saved_context);
        throw;
    }
    SetUserIdAndSecContext(saved_user, saved_context);
    return rows;
}

// Whether baton.in_use holds its row in the latest committed data (or this
// transaction's own writes); remembered once seen.
bool in_use(Oid relid) {
    if (const Oid* kept = g_in_use_relid.get(); kept != nullptr && *kept == relid) return true;
    if (run_as_owner(g_in_use_row, true) == 0) return false;
    g_in_use_relid.set(relid, relid);
    return true;
}

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

// Takes, without waiting, the advisory lock of the transaction that adds baton.in_use's
// row; false when another transaction holds it.
bool try_lock_marking() {
    return guard([] {
        LOCKTAG tag = locks::tag(locks::Purpose::kMarkInUse, 0);
        return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
    });
}

// The three conditions of restore_load.hpp for a row that the running COPY writes to rel.
bool answer(Relation rel) {
    bool owner_copies_rel = guard([rel] {
        CopyStmt* copy = top_level_copy_from();
        if (copy == nullptr) return false;
        // The COPY has opened its table already: resolving its name again finds the same
        // relation, without a lock of its own.
        Oid target = RangeVarGetRelid(copy->relation, NoLock, true);
        return target == RelationGetRelid(rel) && has_privs_of_role(GetUserId(), owner::of_extension());
    });
    if (!owner_copies_rel) return false;
    Oid relid = in_use_relid();
    return OidIsValid(relid) && !in_use(relid);
}

// A COPY statement writing to one table: the portal it runs in, its transaction and
// command, the table.
struct Statement {
    Portal portal;
    LocalTransactionId lxid;
    CommandId command;
    Oid relid;
    bool same_as(const Statement& o) const {
        return portal == o.portal && lxid == o.lxid && command == o.command && relid == o.relid;
    }
};

// The last statement active() answered for, and its answer.
struct Answer {
    Statement statement;
    bool active;
};
Answer g_last_answer;  // zero: none yet

}  // namespace

bool active(Relation rel) {
    // Checked first and without a call into Postgres: the fence trigger asks on every row
    // of every write, and only COPY statements go further.
    if (ActivePortal == nullptr || ActivePortal->commandTag != CMDTAG_COPY) return false;
    // One answer per COPY statement and table: a restore's COPY loads millions of rows.
    Statement now{ActivePortal, BATON_MY_LXID, GetCurrentCommandId(false), RelationGetRelid(rel)};
    if (now.same_as(g_last_answer.statement)) return g_last_answer.active;
    g_last_answer = {now, answer(rel)};
    return g_last_answer.active;
}

void mark_in_use() {
    if (g_in_use_relid.get() != nullptr) return;  // the common case: seen in use before
    Oid relid = in_use_relid();
    if (!OidIsValid(relid) || in_use(relid)) return;
    // Another transaction is adding the row: leave it to that one rather than wait for its
    // end (the row's key would make this insert wait, and every first writer with it); a
    // later write of this backend looks again.
    if (!try_lock_marking()) return;
    if (in_use(relid)) return;  // added, and committed, since the first look
    run_as_owner(g_add_in_use_row, false);
    g_in_use_relid.set(relid, relid);
}

}  // namespace baton::pg::restore_load
