// The fence's triggers: every row written to a tenant-owned table passes the fence,
// whatever path wrote it (the functions, direct SQL, COPY).
#include <cstring>
#include <string>
#include <string_view>

#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/event_count.hpp"
#include "core/key_limit.hpp"
#include "core/scan_floor.hpp"
#include "core/tenant.hpp"
#include "core/upkeep.hpp"
#include "pg/runtime/args.hpp"
#include "pg/access/authz_cache.hpp"
#include "pg/runtime/boundary.hpp"
#include "pg/access/fence.hpp"
#include "pg/deliveries/event_counts.hpp"
#include "pg/deliveries/side_rows.hpp"
#include "pg/deliveries/upkeep.hpp"
#include "pg/runtime/relations.hpp"
#include "pg/access/restore_load.hpp"
#include "pg/citus/citus.hpp"
#include "pg/deliveries/key_admission.hpp"
#include "pg/workers/launcher.hpp"

namespace baton::api {

namespace {

// "relation "name"", the table a trigger refusal names.
std::string relation_text(Relation rel) {
    return "relation \"" + std::string(RelationGetRelationName(rel)) + "\"";
}

// The tenant column of a row: the first column of every tenant-owned table; 22004
// naming the column and the table when it is NULL.
const pg_uuid_t* row_tenant(HeapTuple tuple, Relation rel) {
    bool isnull = false;
    Datum d = heap_getattr(tuple, 1, RelationGetDescr(rel), &isnull);
    if (isnull)
        throw Error(SqlState::kNullValueNotAllowed, "null value in column \"tenant\" of " + relation_text(rel),
                    "Every row of a pg_baton table belongs to one tenant.");
    return DatumGetUUIDP(d);
}

// The TriggerData of a trigger call, refusing a call that is not one.
TriggerData* trigger_data(FunctionCallInfo fcinfo) {
    if (!CALLED_AS_TRIGGER(fcinfo))
        throw Error(SqlState::kInternal, "pg_baton trigger function called outside a trigger");
    return reinterpret_cast<TriggerData*>(fcinfo->context);
}

// The columns of baton.deliveries its trigger reads (the row rules, and the upkeep of the
// side tables and claim hints); is_deliveries is false for the other tables.
struct DeliveryColumns {
    bool is_deliveries;
    AttrNumber id, target, status, priority, run_after, max_attempts, generation, lease_until, created_at;
    AttrNumber key;  // 0 in a schema before keys
};
const char* const kDeliveryColumnNames[] = {"id",        "target",       "status",     "priority",    "run_after",
                                            "max_attempts", "generation", "lease_until", "created_at"};
constexpr int kDeliveryColumns = sizeof kDeliveryColumnNames / sizeof kDeliveryColumnNames[0];
const char* const kKeyColumnName[] = {"key"};

// The columns of `rel` when it is baton.deliveries, or on Citus one of its shards
// (deliveries_102008, ...). `table` is the logical table the trigger guards
// (logical_table()). Its oid and its column numbers are
// found once per backend and kept by pg/runtime/relations until a relcache invalidation of the
// table (a column dropped, added or renamed, the table re-created), so a trigger call
// costs a name compare, an oid compare and a copy. A shard, another relation in schema
// baton, costs a schema lookup more. A table without every one of the columns is not
// treated as deliveries (as before the cache: its row rules cannot be read).
DeliveryColumns delivery_columns(Relation rel, const char* table) {
    DeliveryColumns c{};
    if (std::strcmp(table, "deliveries") != 0) return c;
    pg::guard([rel, &c] {
        if (RelationGetRelid(rel) != pg::relations::relid("deliveries") &&
            RelationGetNamespace(rel) != get_namespace_oid("baton", true))
            return;
        const AttrNumber* n = pg::relations::attnums(rel, kDeliveryColumnNames, kDeliveryColumns);
        c = {true, n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7], n[8], 0};
        for (int i = 0; i < kDeliveryColumns; i++)
            if (n[i] <= 0) c.is_deliveries = false;
        c.key = pg::relations::attnums(rel, kKeyColumnName, 1)[0];
    });
    return c;
}

// The name of the trigger that holds the row rules of baton.deliveries, as \d shows it
// (declared in the install script; pg/deliveries/delivery_direct.cpp knows it by that name too).
constexpr const char* kRuleTrigger = "fence";

// Raises the refusal of a row that breaks a row rule of baton.deliveries: 23514 with the
// rule's own words (delivery::check_stored_row), a hint naming the trigger that holds it,
// and the fields a client reads to find the rule: schema, table and column
// (errtablecol), and as constraint name the trigger "fence", which \d baton.deliveries
// lists. No CHECK constraint holds the rules (docs/internals/performance.md, "The row rules in the
// trigger"), so no name in pg_constraint would be true.
[[noreturn]] void refuse_row(Relation rel, int column, const std::string& message, const std::string& detail) {
    const char* msg = message.c_str();
    const char* det = detail.c_str();
    pg::guard([rel, column, msg, det] {
        ereport(ERROR, (errcode(ERRCODE_CHECK_VIOLATION), errmsg_internal("%s", msg), errdetail_internal("%s", det),
                        errhint("The row rules of baton.deliveries are held by its trigger \"%s\"; "
                                "\\d+ baton.deliveries describes them.",
                                kRuleTrigger),
                        errtablecol(rel, column), errtableconstraint(rel, kRuleTrigger)));
    });
    throw Error(SqlState::kInternal, "ereport returned");  // not reached: guard() threw
}

// The row rules of a delivery row written (delivery::check_stored_row: a status among
// the five, max_attempts at least 1), checked here rather than by CHECK constraints
// (see refuse_row). NULLs are left to the columns' NOT NULL constraints.
void check_delivery_row(HeapTuple tuple, Relation rel, const DeliveryColumns& c) {
    TupleDesc desc = RelationGetDescr(rel);
    bool status_null = false, max_null = false, id_null = false;
    Datum status = heap_getattr(tuple, c.status, desc, &status_null);
    Datum max_attempts = heap_getattr(tuple, c.max_attempts, desc, &max_null);
    Datum id = heap_getattr(tuple, c.id, desc, &id_null);
    if (status_null || max_null || id_null) return;
    text* s = DatumGetTextPP(status);
    std::string_view status_text(VARDATA_ANY(s), VARSIZE_ANY_EXHDR(s));
    std::string message, detail;
    try {
        delivery::check_stored_row(status_text, DatumGetInt32(max_attempts), DatumGetInt64(id));
        return;
    } catch (const Error& e) {
        if (e.state() != SqlState::kCheckViolation) throw;
        message = e.message();
        detail = e.detail();
    }
    // check_stored_row checks the status first.
    refuse_row(rel, delivery::parse_status(status_text) ? c.max_attempts : c.status, message, detail);
}

// True for the side tables of deliveries (their logical names, logical_table()).
bool side_table(const char* table) {
    return std::strcmp(table, "leases") == 0 || std::strcmp(table, "ready") == 0 ||
           std::strcmp(table, "key_slots") == 0 || std::strcmp(table, "key_waiting") == 0;
}

// Keeps baton.ready, baton.leases and the claim hints in step with a write to
// baton.deliveries (pg/deliveries/upkeep.hpp): the row's versions before and after, as
// the upkeep reads them (the tenant is the first column), given to upkeep::move(), which
// the direct path calls too.
void note_move(TriggerData* td, const DeliveryColumns& c) {
    pg::guard([td, &c] {
        const pg::upkeep::Columns cols{1, c.id, c.target, c.status, c.priority, c.run_after, c.generation,
                                       c.lease_until, c.key};
        TriggerEvent ev = td->tg_event;
        pg::upkeep::Version before{}, after{};
        bool has_before = !TRIGGER_FIRED_BY_INSERT(ev), has_after = !TRIGGER_FIRED_BY_DELETE(ev);
        if (has_before) before = pg::upkeep::read(td->tg_trigslot, cols);
        if (has_after) after = pg::upkeep::read(TRIGGER_FIRED_BY_UPDATE(ev) ? td->tg_newslot : td->tg_trigslot, cols);
        pg::upkeep::Writers w = pg::upkeep::writers(td->tg_relation);
        pg::upkeep::move(&w, has_before ? &before : nullptr, has_after ? &after : nullptr);
        pg::upkeep::close(&w);
    });
}

// The columns of baton.key_limits note_limit() reads.
enum LimitColumn { kLimitTenant, kLimitTarget, kLimitKey, kLimitMax, kLimitOrdered, kLimitRate, kLimitPer, kLimitBurst,
                   kLimitColumns };
const char* const kLimitColumnNames[kLimitColumns] = {"tenant", "target", "key", "max_leased", "ordered",
                                                      "rate",   "per",    "burst"};

// A write to baton.key_limits (limit_key, rate_limit_key, unlimit_key, direct SQL, a
// restore's rows): the deliveries of the keys the old and the new row cover are
// admitted afresh under the limit that applies to them now
// (pg/deliveries/key_admission.hpp).
void note_limit(TriggerData* td) {
    pg::guard([td] {
        Relation rel = td->tg_relation;
        TupleDesc desc = RelationGetDescr(rel);
        const AttrNumber* n = pg::relations::attnums(rel, kLimitColumnNames, kLimitColumns);
        AttrNumber col[kLimitColumns];
        for (int i = 0; i < kLimitColumns; i++) {
            col[i] = n[i];
            if (col[i] <= 0) elog(ERROR, "pg_baton cannot find column baton.key_limits.%s", kLimitColumnNames[i]);
        }
        struct Row {
            const pg_uuid_t* tenant;
            text* target;
            text* key;
            pg::key_admission::Limit limit;
        };
        auto read = [desc, &col](HeapTuple t) {
            bool isnull[kLimitColumns] = {};
            Datum v[kLimitColumns];
            for (int i = 0; i < kLimitColumns; i++) v[i] = heap_getattr(t, col[i], desc, &isnull[i]);
            Row row{DatumGetUUIDP(v[kLimitTenant]), DatumGetTextPP(v[kLimitTarget]), DatumGetTextPP(v[kLimitKey]),
                    {true, {}, VARSIZE_ANY_EXHDR(DatumGetTextPP(v[kLimitKey])) == 0}};
            key_limit::Limit& r = row.limit.rule;
            r.max_leased = isnull[kLimitMax] ? 0 : DatumGetInt32(v[kLimitMax]);
            r.ordered = !isnull[kLimitOrdered] && DatumGetBool(v[kLimitOrdered]);
            if (!isnull[kLimitRate] && !isnull[kLimitPer] && !isnull[kLimitBurst]) {
                r.rate = DatumGetInt32(v[kLimitRate]);
                r.per_usec = pg::interval_usec(DatumGetIntervalP(v[kLimitPer]));
                r.burst = DatumGetInt32(v[kLimitBurst]);
            }
            return row;
        };
        // Every backend forgets the limits it read, at this commit (key_admission::find()).
        CacheInvalidateRelcacheByRelid(RelationGetRelid(rel));
        TriggerEvent ev = td->tg_event;
        if (!TRIGGER_FIRED_BY_INSERT(ev)) {
            Row old = read(td->tg_trigtuple);
            bool same_scope = false;
            if (TRIGGER_FIRED_BY_UPDATE(ev)) {
                Row now = read(td->tg_newtuple);
                same_scope = std::memcmp(old.tenant, now.tenant, sizeof *old.tenant) == 0 &&
                             pg::text_view(old.target) == pg::text_view(now.target) &&
                             pg::text_view(old.key) == pg::text_view(now.key);
            }
            if (!same_scope) pg::key_admission::set(old.tenant, old.target, old.key, nullptr);
        }
        if (!TRIGGER_FIRED_BY_DELETE(ev)) {
            Row now = read(TRIGGER_FIRED_BY_UPDATE(ev) ? td->tg_newtuple : td->tg_trigtuple);
            pg::key_admission::set(now.tenant, now.target, now.key, &now.limit);
        }
    });
}

// A delivery written with a creation time purge's floor may have passed (inserted by a
// transaction that began more than kEarly before, restored, or its created_at updated)
// is reported, so that purge reads down to it (launcher::report_purge_floor()).
void note_created(TriggerData* td, HeapTuple written, const DeliveryColumns& c) {
    TupleDesc desc = RelationGetDescr(td->tg_relation);
    bool isnull = false;
    Datum created = heap_getattr(written, c.created_at, desc, &isnull);
    if (isnull) return;
    TimestampTz at = DatumGetTimestampTz(created);
    if (TRIGGER_FIRED_BY_UPDATE(td->tg_event)) {
        bool before_null = false;
        Datum before = heap_getattr(td->tg_trigtuple, c.created_at, desc, &before_null);
        if (!before_null && DatumGetTimestampTz(before) == at) return;
    } else if (at >= GetCurrentTimestamp() - scan_floor::kEarly) {
        return;
    }
    pg::launcher::report_purge_floor(at);
}

// The logical table a trigger guards: its first argument (the install script names the
// table there, and Citus copies a trigger's arguments to the triggers of the table's
// shards, which fire on deliveries_102008 and the like), else the relation's own name.
const char* logical_table(const TriggerData* td) {
    const Trigger* tg = td->tg_trigger;
    return tg->tgnargs > 0 ? tg->tgargs[0] : RelationGetRelationName(td->tg_relation);
}

// BEFORE INSERT/UPDATE/DELETE FOR EACH ROW on every tenant-owned table, the side tables
// of deliveries (leases, ready) included: the row's tenant (old and new, for an update)
// must be writable, but for the rows a restore loads and, on a side table, the rows
// pg_baton writes with a delivery row (side_rows::writing(): the delivery's row passed
// the fence, or is a restore's). On deliveries, the row must also
// keep the row rules, and the side tables and claim hints are kept in step with the write
// (note_move(): a lease it takes added to baton.leases, its place in claim order to
// baton.ready); on target_bindings, the write is told to pg/access/authz_cache. On
// paused_targets, which holds no tenant's rows, only the latter.
Datum fence_row(FunctionCallInfo fcinfo, Oid) {
    TriggerData* td = trigger_data(fcinfo);
    Relation rel = td->tg_relation;
    TriggerEvent ev = td->tg_event;
    HeapTuple written = TRIGGER_FIRED_BY_UPDATE(ev) ? td->tg_newtuple : td->tg_trigtuple;
    if (pg::side_rows::writing() && side_table(logical_table(td))) return PointerGetDatum(written);
    // Not a tenant's row: a target paused in every tenant is part of each binding.
    if (std::strcmp(logical_table(td), "paused_targets") == 0) {
        pg::authz_cache::changed(rel);
        return PointerGetDatum(written);
    }
    bool restoring = false;
    if (TRIGGER_FIRED_BY_INSERT(ev)) {
        // A restore loads every tenant's rows, whatever its state (pg/access/restore_load.hpp).
        restoring = pg::restore_load::active(rel);
        if (!restoring) pg::fence::require_row_writable(row_tenant(td->tg_trigtuple, rel));
    } else if (TRIGGER_FIRED_BY_UPDATE(ev)) {
        const pg_uuid_t* before = row_tenant(td->tg_trigtuple, rel);
        const pg_uuid_t* after = row_tenant(td->tg_newtuple, rel);
        pg::fence::require_row_writable(before);
        if (std::memcmp(before, after, sizeof *before) != 0) pg::fence::require_row_writable(after);
    } else {
        pg::fence::require_row_writable(row_tenant(td->tg_trigtuple, rel));
    }
    // A binding written: every backend forgets the bindings it knows, at this commit.
    if (std::strcmp(logical_table(td), "target_bindings") == 0) pg::authz_cache::changed(rel);
    if (std::strcmp(logical_table(td), "key_limits") == 0) {
        if (pg::citus::distributed())
            throw Error(SqlState::kFeatureNotSupported, "key limits are not available on a distributed install",
                        "The admission of a key's deliveries is kept on a single server.",
                        "Limit keys on a single server; see docs/guide/limits.md.");
        pg::side_rows::Writing side_rows;  // the waiting deliveries' rows move with the limit
        note_limit(td);
    }
    const DeliveryColumns c = delivery_columns(td->tg_relation, logical_table(td));
    if (c.is_deliveries) {
        if (!TRIGGER_FIRED_BY_DELETE(ev)) {
            check_delivery_row(written, rel, c);
            note_created(td, written, c);
        }
        pg::side_rows::Writing side_rows;
        // A restored delivery was counted where it was written: its counts come with the
        // restored baton.event_counts.
        if (restoring) {
            pg::event_counts::Scope restored(pg::event_counts::set_restoring);
            note_move(td, c);
        } else {
            note_move(td, c);
        }
    }
    return PointerGetDatum(written);
}

// BEFORE TRUNCATE on tenant-owned tables: a truncate writes to every tenant at once
// and passes no row trigger, so it is refused.
Datum refuse_truncate(FunctionCallInfo fcinfo, Oid) {
    TriggerData* td = trigger_data(fcinfo);
    throw Error(SqlState::kInvalidState, "pg_baton " + relation_text(td->tg_relation) + " cannot be truncated",
                "A truncate would bypass the tenant write fence.",
                "Delete one tenant's rows with DELETE, or drop the extension.");
}

// The column of baton.tenants its trigger reads, found once per backend (pg/runtime/relations).
const char* const kTenantColumnNames[] = {"state"};

// BEFORE UPDATE/DELETE FOR EACH ROW and BEFORE TRUNCATE on baton.tenants: a change of
// state takes the fence exclusively (so direct SQL is fenced like set_tenant_state) and
// makes every backend forget the tenants it found writable, at its commit (pg/access/authz_cache);
// tenant ids never change, deleted is final, and tenants are never removed.
Datum tenant_state_guard(FunctionCallInfo fcinfo, Oid) {
    TriggerData* td = trigger_data(fcinfo);
    TriggerEvent ev = td->tg_event;
    if (!TRIGGER_FIRED_FOR_ROW(ev))
        throw Error(SqlState::kInvalidState, "pg_baton " + relation_text(td->tg_relation) + " cannot be truncated",
                    "A tenant row stays for as long as the extension: its state is the fence.",
                    "Use baton.set_tenant_state(tenant, 'deleted').");
    Relation rel = td->tg_relation;
    TupleDesc desc = rel->rd_att;
    if (TRIGGER_FIRED_BY_DELETE(ev))
        throw Error(SqlState::kInvalidState,
                    "tenant " + std::string(pg::tenant_text(row_tenant(td->tg_trigtuple, rel))) +
                        " cannot be removed",
                    "A tenant row stays for as long as the extension: its state is the fence.",
                    "Use baton.set_tenant_state(tenant, 'deleted').");
    const pg_uuid_t* before = row_tenant(td->tg_trigtuple, rel);
    const pg_uuid_t* after = row_tenant(td->tg_newtuple, rel);
    if (std::memcmp(before, after, sizeof *before) != 0)
        throw Error(SqlState::kInvalidState,
                    "tenant " + std::string(pg::tenant_text(before)) + " cannot change its id to " +
                        pg::tenant_text(after),
                    "Every row of a tenant carries its id.");
    // 0 when the table has no state column: SPI_getvalue then reads NULL, and no state changes.
    int state_col = pg::guard([rel] { return pg::relations::attnums(rel, kTenantColumnNames, 1)[0]; });
    char* old_state = pg::guard([td, desc, state_col] { return SPI_getvalue(td->tg_trigtuple, desc, state_col); });
    char* new_state = pg::guard([td, desc, state_col] { return SPI_getvalue(td->tg_newtuple, desc, state_col); });
    if (old_state && new_state && std::strcmp(old_state, new_state) != 0) {
        auto from = tenant::parse_state(old_state);
        auto to = tenant::parse_state(new_state);
        if (from && to) tenant::check_move(*from, *to, pg::tenant_text(before));
        pg::fence::lock_exclusive(before);
        pg::authz_cache::changed(rel);
        // The leases of a tenant that becomes active again may have expired while the
        // reaper passed them by: its batches look at every lease until their next full
        // scan (core/scan_floor.hpp), and purge reads its deliveries, which it passed by
        // while the tenant was not active, from the first (launcher::report_purge_floor()).
        if (to && *to == tenant::State::kActive) {
            pg::launcher::report_early_lease(DT_NOBEGIN);
            pg::launcher::report_purge_floor(DT_NOBEGIN);
        }
    }
    return PointerGetDatum(td->tg_newtuple);
}

}  // namespace

}  // namespace baton::api

BATON_TRIGGER(baton_fence_row, baton::api::fence_row)
BATON_TRIGGER(baton_refuse_truncate, baton::api::refuse_truncate)
BATON_TRIGGER(baton_tenant_state_guard, baton::api::tenant_state_guard)
