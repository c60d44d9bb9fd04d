// The calls of a lease's holder: renew, finish, finish_batch and retry. Each checks its
// arguments, the fence and then, through the store, reads or writes the row; the row as
// found comes back, the caller's right to its target is checked (DU005), and the core's
// verdict on the row says what the caller is owed (the stored answer, DU001, DU007).
#include <string>
#include <unordered_set>

#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/tenant.hpp"
#include "pg/runtime/args.hpp"
#include "pg/runtime/arrays.hpp"
#include "pg/access/auth.hpp"
#include "pg/deliveries/delivery_store.hpp"
#include "pg/access/fence.hpp"
#include "pg/access/read_only.hpp"
#include "pg/runtime/spi.hpp"

namespace baton::api {

namespace {

// Common arguments of renew, finish and retry.
struct LeaseCall {
    pg_uuid_t* tenant;
    std::int64_t id;
    std::int64_t generation;
};

// Reads the tenant, id and generation arguments (22004 when NULL).
LeaseCall lease_call_args(FunctionCallInfo fcinfo) {
    return {pg::uuid_arg(fcinfo, 0, "tenant"), pg::int64_arg(fcinfo, 1, "id"),
            pg::int64_arg(fcinfo, 2, "generation")};
}

// DU008 unless the delivery exists; DU005 unless the caller may work on its target
// (whether or not the call wrote: the error rolls the write back). Returns its row.
const delivery::Row& authorized(const pg::FoundDelivery& f, const pg_uuid_t* tenant, std::int64_t id, Oid caller) {
    if (!f.found)
        throw Error(SqlState::kNotFound,
                    "delivery " + std::to_string(id) + " does not exist in tenant " + pg::uuid_text(tenant),
                    "Deliveries are addressed by (tenant, id).");
    pg::auth::require_member(caller, f.role, f.target);
    return f.row;
}

// DU001 for a holder whose generation no longer holds the delivery.
[[noreturn]] void throw_lease_lost(std::int64_t id, std::int64_t caller_gen, const delivery::Row& row) {
    throw Error(SqlState::kLeaseLost, "lease on delivery " + std::to_string(id) + " is lost",
                "The call carries generation " + std::to_string(caller_gen) + "; the delivery is " +
                    delivery::status_name(row.status) + " at generation " + std::to_string(row.generation) + ".",
                "Stop working on it: another holder, a retry or the reaper has taken it over.");
}

// What a finish or retry owes its caller for the row as found (after its write, when
// it wrote): the stored status once settled at the caller's generation, else DU001.
delivery::Status stored_answer(const delivery::Row& row, const LeaseCall& call) {
    if (delivery::settle_verdict(row, call.generation) != delivery::Verdict::kReturnStored)
        throw_lease_lost(call.id, call.generation, row);
    return row.status;
}

// The status a settling call answers, as text in the caller's memory context (made
// after the store's SPI connection has ended, whose memory goes with it).
Datum status_text(delivery::Status status) { return pg::text_datum(delivery::status_name(status)); }

// baton.renew(tenant, id, generation, lease): extends the lease of the holder of that
// generation to now() + lease; returns the new lease_until.
Datum renew(FunctionCallInfo fcinfo, Oid caller) {
    pg::require_read_write("baton.renew");
    LeaseCall call = lease_call_args(fcinfo);
    Interval* lease = pg::interval_arg(fcinfo, 3, "lease");
    delivery::check_lease_usec(pg::interval_usec(lease));
    pg::fence::require_writable(call.tenant);
    pg::DeliveryStore store;
    pg::FoundDelivery f = store.renew(call.tenant, call.id, call.generation, lease);
    const delivery::Row& row = authorized(f, call.tenant, call.id, caller);
    switch (delivery::renew_verdict(row, call.generation)) {
        case delivery::Verdict::kApply: PG_RETURN_TIMESTAMPTZ(f.lease_until);
        case delivery::Verdict::kSettled:
            throw Error(SqlState::kInvalidState,
                        "delivery " + std::to_string(call.id) + " is already " + delivery::status_name(row.status),
                        "A settled delivery has no lease to renew.");
        default: throw_lease_lost(call.id, call.generation, row);
    }
}

// baton.finish(tenant, id, generation, outcome, result): settles the delivery as
// finished or failed, once; the settling generation's repeats return the stored status.
delivery::Status finish_delivery(FunctionCallInfo fcinfo, Oid caller) {
    LeaseCall call = lease_call_args(fcinfo);
    text* outcome_text = pg::text_arg(fcinfo, 3, "outcome");
    Jsonb* result = PG_ARGISNULL(4) ? nullptr : pg::jsonb_arg(fcinfo, 4, "result");
    delivery::Status outcome = delivery::parse_outcome(pg::text_view(outcome_text));
    if (result != nullptr) pg::check_result(result);
    pg::fence::require_writable(call.tenant);
    pg::DeliveryStore store;
    pg::FoundDelivery f = store.settle(call.tenant, call.id, call.generation, outcome, result);
    store.close();
    return stored_answer(authorized(f, call.tenant, call.id, caller), call);
}

// The SQL entry point of finish: the answer's text is made after the store has closed.
Datum finish(FunctionCallInfo fcinfo, Oid caller) {
    pg::require_read_write("baton.finish");
    return status_text(finish_delivery(fcinfo, caller));
}

// baton.finish_batch(tenant, ids, generations, outcome): finish for many deliveries in
// one call. Each (id, generation) pair is settled like finish, but a pair whose lease is
// lost answers 'lease_lost' (and an unknown id 'not_found') instead of failing the
// others; a bound target the caller may not work on fails the whole call (DU005).
Datum finish_batch(FunctionCallInfo fcinfo, Oid caller) {
    pg::require_read_write("baton.finish_batch");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    pg::Int64Array ids = pg::int64_array_arg(fcinfo, 1, "ids");
    pg::Int64Array generations = pg::int64_array_arg(fcinfo, 2, "generations");
    text* outcome_text = pg::text_arg(fcinfo, 3, "outcome");
    if (ids.n != generations.n)
        throw_invalid_argument("generations", "ids and generations have the same length (" +
                                                  std::to_string(ids.n) + " and " + std::to_string(generations.n) + ").");
    if (ids.n < 1 || ids.n > limits::kMaxFinishBatch)
        throw_invalid_argument("ids", "A batch has 1 to " + std::to_string(limits::kMaxFinishBatch) + " items, not " +
                                          std::to_string(ids.n) + ".");
    std::unordered_set<std::int64_t> seen;
    for (int i = 0; i < ids.n; i++)
        if (!seen.insert(DatumGetInt64(ids.values[i])).second)
            throw_invalid_argument("ids", "Each id appears once; " + std::to_string(DatumGetInt64(ids.values[i])) +
                                              " appears twice.");
    delivery::Status outcome = delivery::parse_outcome(pg::text_view(outcome_text));
    pg::fence::require_writable(tenant);
    ReturnSetInfo* rsinfo = pg::materialize(fcinfo);
    pg::DeliveryStore store;
    pg::FoundDelivery* found =
        pg::guard([ids] { return static_cast<pg::FoundDelivery*>(palloc(sizeof(pg::FoundDelivery) * ids.n)); });
    store.settle_batch(tenant, ids, generations, outcome, found);
    for (int i = 0; i < ids.n; i++) {
        if (found[i].found) pg::auth::require_member(caller, found[i].role, found[i].target);
        const char* answer =
            delivery::batch_answer(found[i].found ? &found[i].row : nullptr, DatumGetInt64(generations.values[i]));
        Datum out[2] = {ids.values[i], pg::text_datum(answer)};
        bool nulls[2] = {false, false};
        pg::put_row(rsinfo, out, nulls);
    }
    store.close();
    return static_cast<Datum>(0);
}

// baton.retry(tenant, id, generation, error, delay): gives the attempt back where
// delivery::retry_give_back() sends it: pending after delay (NULL: the backoff) under
// generation + 1, or failed at the same generation once max_attempts are spent.
// Returns the new status.
delivery::Status retry_delivery(FunctionCallInfo fcinfo, Oid caller) {
    LeaseCall call = lease_call_args(fcinfo);
    text* error = pg::text_arg(fcinfo, 3, "error");
    Interval* delay = PG_ARGISNULL(4) ? nullptr : PG_GETARG_INTERVAL_P(4);
    delivery::check_error_bytes(VARSIZE_ANY_EXHDR(error));
    if (delay != nullptr) delivery::check_delay_usec(pg::interval_usec(delay));
    pg::fence::require_writable(call.tenant);
    pg::DeliveryStore store;
    pg::FoundDelivery f = store.lock(call.tenant, call.id);
    const delivery::Row& row = authorized(f, call.tenant, call.id, caller);
    if (delivery::settle_verdict(row, call.generation) != delivery::Verdict::kApply) return stored_answer(row, call);
    delivery::GiveBack to = delivery::retry_give_back(row);
    store.give_back(call.tenant, call.id, to, delay, error);
    return to.status;
}

// The SQL entry point of retry: the answer's text is made after the store has closed.
Datum retry(FunctionCallInfo fcinfo, Oid caller) {
    pg::require_read_write("baton.retry");
    return status_text(retry_delivery(fcinfo, caller));
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_renew, baton::api::renew)
BATON_FUNCTION(baton_finish, baton::api::finish)
BATON_FUNCTION(baton_finish_batch, baton::api::finish_batch)
BATON_FUNCTION(baton_retry, baton::api::retry)
