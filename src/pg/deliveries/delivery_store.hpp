// The one way the entry points read and write baton.deliveries. Two implementations sit
// behind it, and the store picks:
//   - direct heap and index access (pg/deliveries/delivery_direct.hpp) for claim, finish and
//     finish_batch, the calls every worker makes in a loop, when delivery_direct::open()
//     succeeds;
//   - kept SQL statements (pg/deliveries/delivery_statements.cpp) for every other call, and for
//     claim, finish and finish_batch when direct access is not available (baton.direct_access
//     off, a user's trigger or rule on the table, ...) or a claim filters by `expected`.
// Neither decides anything about a delivery: which row may be claimed, who holds a lease
// and what a row owes its caller are src/core/delivery.hpp's, and both ask it. The caller
// checks the fence first and authorizes with the role each result carries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "pg/access/authz_cache.hpp"
#include "pg/deliveries/delivery_rows.hpp"
#include "pg/runtime/arrays.hpp"
#include "pg/runtime/spi.hpp"

namespace baton::pg {

namespace delivery_direct {
struct Table;
enum class Use;
}

// One call's access to baton.deliveries. Lives in the entry point's frame; close() ends
// the direct access (its writes become visible to later commands). After an error the
// transaction's abort releases everything it held.
class DeliveryStore {
public:
    DeliveryStore() = default;
    DeliveryStore(const DeliveryStore&) = delete;
    DeliveryStore& operator=(const DeliveryStore&) = delete;
    void close();

    // What binds (tenant, target): its role (InvalidOid when unbound), weight and pause;
    // the last answer is kept.
    const authz_cache::Binding& binding(const pg_uuid_t* tenant, const char* target, int target_len);
    Oid bound_role(const pg_uuid_t* tenant, const char* target, int target_len) {
        return binding(tenant, target, target_len).role;
    }

    // enqueue: whether run_id names a run of the tenant; one insert attempt.
    bool run_exists(pg_uuid_t* tenant, pg_uuid_t* run_id);
    Added add(pg_uuid_t* tenant, const NewDelivery& d);
    // What holds d's key: kExisting (the same payload and binding or not), or kNeither.
    Added existing(pg_uuid_t* tenant, const NewDelivery& d);
    // enqueue_batch: the first of items[0..n) whose run_id names no run of the tenant, or n.
    int first_missing_run(pg_uuid_t* tenant, const NewDelivery* items, int n);
    // enqueue_batch: what holds each item's key (kExisting: id and whether the row
    // carries the same payload and binding; kNeither: the key is free), in one statement.
    void taken(pg_uuid_t* tenant, const NewDelivery* items, int n, Added* out);
    // enqueue_batch: one id of the table's sequence per item of items[0..n), in item
    // order, into ids (a statement per item took one each).
    void take_ids(int n, std::int64_t* ids);
    // enqueue_batch: inserts the items with insert[i], with the ids taken (ids[i]), at once
    // (directly, or in one statement); then ids[i] is 0 for an item not inserted (not chosen, or its key taken by
    // a concurrent producer: existing() tells which row). A key found taken: with
    // around_taken, on one node, the items are inserted around it (ON CONFLICT DO
    // NOTHING); else, and always on a Citus install (where the statement that inserts
    // around taken keys cannot run: Citus fails its RETURNING rows inside SPI), false,
    // with nothing inserted and ids unchanged.
    bool add_all(pg_uuid_t* tenant, const NewDelivery* items, int n, const bool* insert, std::int64_t* ids,
                 bool around_taken);

    // The fair claim's next tenant: the first after `after` (nullptr: the first of all),
    // in order of id, with a pending delivery of target, into *tenant; false when there
    // is none.
    bool tenant_with_pending(text* target, const pg_uuid_t* after, pg_uuid_t* tenant);

    // Claims up to n rows of one range, appending them to call.rsinfo.
    Claimed claim(const ClaimCall& call, ClaimRange range, claim_hint::Position from, std::int64_t n);

    // renew: lease_until = now() + lease where the caller holds the lease; the row either way.
    FoundDelivery renew(pg_uuid_t* tenant, std::int64_t id, std::int64_t generation, Interval* lease);
    // finish: settles as `outcome` (with result) where the caller holds the lease.
    FoundDelivery settle(pg_uuid_t* tenant, std::int64_t id, std::int64_t generation, delivery::Status outcome,
                         Jsonb* result);
    // finish_batch: settle() for every (ids[i], generations[i]) pair, result kept; out[i] per pair.
    void settle_batch(pg_uuid_t* tenant, const Int64Array& ids, const Int64Array& generations,
                      delivery::Status outcome, FoundDelivery* out);
    // retry: the row locked (FOR UPDATE); then the write delivery::retry_give_back() chose,
    // waiting `delay` or, when it is nullptr, the backoff.
    FoundDelivery lock(pg_uuid_t* tenant, std::int64_t id);
    void give_back(pg_uuid_t* tenant, std::int64_t id, const delivery::GiveBack& to, Interval* delay, text* error);

    // reap: the tenants among the oldest expired leases expiring at `from` or later, each
    // with the expiry of its oldest (palloc'd, *n of them, oldest first); then up to
    // max_rows expired leases of one tenant, expiring at `from` or later, given back.
    // Returns how many.
    struct ReapTenant {
        pg_uuid_t* tenant;
        TimestampTz oldest;
    };
    ReapTenant* reap_tenants(std::int32_t max_rows, TimestampTz from, std::uint64_t* n);
    std::int32_t reap(const ReapTenant& tenant, std::int32_t max_rows);

    // cancel_delivery: the row locked (FOR UPDATE), as lock(); then the write
    // delivery::cancelled() chose: cancelled at generation `generation`, no lease,
    // settled now, last_error = reason (kept when reason is nullptr).
    bool cancel(pg_uuid_t* tenant, std::int64_t id, std::int64_t generation, text* reason);
    // redrive: the failed and cancelled deliveries of (tenant, target), oldest settled
    // first, at most max_rows (ids nullptr), or those of `ids`, sent back to pending as
    // delivery::redriven() says, due now. Rows locked by others are skipped. Returns how
    // many; with ids, the ids that did not move into *skipped (in the order given).
    std::int64_t redrive(pg_uuid_t* tenant, text* target, const Int64Array* ids, std::int32_t max_rows,
                         std::vector<std::int64_t>* skipped = nullptr);
    // What a delivery redrive skipped is now: absent, or its target and status.
    struct Skipped {
        std::int64_t id;
        bool exists;
        std::string target;
        std::string status;
    };
    std::vector<Skipped> describe_skipped(pg_uuid_t* tenant, const std::vector<std::int64_t>& ids);

    // The whole row (tenant, id) as a composite datum copied out; nullopt when absent.
    std::optional<Datum> row(pg_uuid_t* tenant, std::int64_t id);

private:
    Spi& spi();                        // the statements' connection, made on first use
    // the direct access, opened on first use for what that use writes; nullptr: none, or
    // on a Citus worker (pg/citus/local_group.hpp) the current call is not served from the
    // shards of `tenant` it was opened on
    delivery_direct::Table* direct(delivery_direct::Use use, const pg_uuid_t* tenant);
    Claimed claim_by_statement(const ClaimCall& call, ClaimRange range, claim_hint::Position from, std::int64_t n);
    FoundDelivery settle_by_statement(pg_uuid_t* tenant, std::int64_t id, std::int64_t generation,
                                      delivery::Status outcome, Jsonb* result);
    void settle_batch_by_statement(pg_uuid_t* tenant, const Int64Array& ids, const Int64Array& generations,
                                   delivery::Status outcome, FoundDelivery* out);
    bool add_all_by_statement(pg_uuid_t* tenant, const NewDelivery* chosen, int m, const std::int64_t* chosen_ids,
                              const bool* insert, int n, std::int64_t* ids, bool around_taken, bool plain_first);

    std::optional<Spi> spi_;
    delivery_direct::Table* table_ = nullptr;
    bool tried_direct_ = false;
    bool table_on_shards_ = false;  // table_ is a Citus worker's shards of table_tenant_
    pg_uuid_t table_tenant_{};
    pg_uuid_t binding_tenant_{};            // the key of the last binding() answer
    const char* binding_target_ = nullptr;
    int binding_target_len_ = 0;
    authz_cache::Binding binding_{InvalidOid, 1, false};
};

}  // namespace baton::pg
