// The fence's triggers: every row written to a tenant-owned table passes the fence,
// whatever path wrote it (the functions, direct SQL, COPY).
#include <cstring>

#include "core/error.hpp"
#include "core/tenant.hpp"
#include "pg/args.hpp"
#include "pg/boundary.hpp"
#include "pg/fence.hpp"

namespace baton::api {

namespace {

// The tenant column of a row: the first column of every tenant-owned table.
const pg_uuid_t* row_tenant(HeapTuple tuple, TupleDesc desc) {
    bool isnull = false;
    Datum d = heap_getattr(tuple, 1, desc, &isnull);
    if (isnull) throw_null_argument("tenant");
    return DatumGetUUIDP(d);
}

// The TriggerData of a trigger call, refusing a call that is not one.
TriggerData* trigger_data(FunctionCallInfo fcinfo) {
    if (!CALLED_AS_TRIGGER(fcinfo))
        throw Error(SqlState::kInternal, "pg_baton trigger function called outside a trigger");
    return reinterpret_cast<TriggerData*>(fcinfo->context);
}

// BEFORE INSERT/UPDATE/DELETE FOR EACH ROW on deliveries, runs, target_bindings:
// the row's tenant (old and new, for an update) must be writable.
Datum fence_row(FunctionCallInfo fcinfo, Oid) {
    TriggerData* td = trigger_data(fcinfo);
    TupleDesc desc = td->tg_relation->rd_att;
    TriggerEvent ev = td->tg_event;
    if (TRIGGER_FIRED_BY_INSERT(ev)) {
        pg::fence::require_writable(row_tenant(td->tg_trigtuple, desc));
        return PointerGetDatum(td->tg_trigtuple);
    }
    if (TRIGGER_FIRED_BY_UPDATE(ev)) {
        const pg_uuid_t* before = row_tenant(td->tg_trigtuple, desc);
        const pg_uuid_t* after = row_tenant(td->tg_newtuple, desc);
        pg::fence::require_writable(before);
        if (std::memcmp(before, after, sizeof *before) != 0) pg::fence::require_writable(after);
        return PointerGetDatum(td->tg_newtuple);
    }
    pg::fence::require_writable(row_tenant(td->tg_trigtuple, desc));
    return PointerGetDatum(td->tg_trigtuple);
}

// BEFORE TRUNCATE on tenant-owned tables: a truncate writes to every tenant at once
// and passes no row trigger, so it is refused.
Datum refuse_truncate(FunctionCallInfo fcinfo, Oid) {
    (void)trigger_data(fcinfo);
    throw Error(SqlState::kInvalidState, "pg_baton tables cannot be truncated",
                "A truncate would bypass the tenant write fence.",
                "Delete one tenant's rows with DELETE, or drop the extension.");
}

// BEFORE UPDATE/DELETE FOR EACH ROW and BEFORE TRUNCATE on baton.tenants: a change of
// state takes the fence exclusively (so direct SQL is fenced like set_tenant_state);
// tenant ids never change, deleted is final, and tenants are never removed.
Datum tenant_state_guard(FunctionCallInfo fcinfo, Oid) {
    TriggerData* td = trigger_data(fcinfo);
    TriggerEvent ev = td->tg_event;
    if (!TRIGGER_FIRED_FOR_ROW(ev) || TRIGGER_FIRED_BY_DELETE(ev))
        throw Error(SqlState::kInvalidState, "tenants cannot be removed",
                    "A tenant row stays for as long as the extension: its state is the fence.",
                    "Use baton.set_tenant_state(tenant, 'deleted').");
    TupleDesc desc = td->tg_relation->rd_att;
    const pg_uuid_t* before = row_tenant(td->tg_trigtuple, desc);
    const pg_uuid_t* after = row_tenant(td->tg_newtuple, desc);
    if (std::memcmp(before, after, sizeof *before) != 0)
        throw Error(SqlState::kInvalidState, "a tenant's id cannot change",
                    "Every row of a tenant carries its id.");
    int state_col = pg::guard([desc] { return SPI_fnumber(desc, "state"); });
    char* old_state = pg::guard([td, desc, state_col] { return SPI_getvalue(td->tg_trigtuple, desc, state_col); });
    char* new_state = pg::guard([td, desc, state_col] { return SPI_getvalue(td->tg_newtuple, desc, state_col); });
    if (old_state && new_state && std::strcmp(old_state, new_state) != 0) {
        auto from = tenant::parse_state(old_state);
        auto to = tenant::parse_state(new_state);
        if (from && to) tenant::check_move(*from, *to);
        pg::fence::lock_exclusive(before);
    }
    return PointerGetDatum(td->tg_newtuple);
}

}  // namespace

}  // namespace baton::api

BATON_TRIGGER(baton_fence_row, baton::api::fence_row)
BATON_TRIGGER(baton_refuse_truncate, baton::api::refuse_truncate)
BATON_TRIGGER(baton_tenant_state_guard, baton::api::tenant_state_guard)
