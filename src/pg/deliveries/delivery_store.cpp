// The delivery store (see delivery_store.hpp): which implementation serves a call, and
// what both share. The statements themselves are in delivery_statements.cpp.
#include <cstring>

#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "pg/access/auth.hpp"
#include "pg/access/authz_cache.hpp"
#include "pg/citus/citus.hpp"
#include "pg/deliveries/delivery_direct.hpp"
#include "pg/deliveries/delivery_store.hpp"

namespace baton::pg {

namespace {

// The role bound to (tenant, target), as a statement: on a Citus install
// target_bindings' rows are in shards, which the direct probe cannot read. The role by
// name, resolved on this node (auth::role_named()): the shard's node has its own oid.
KeptPlan g_bound_role = {
    "SELECT b.role::pg_catalog.text FROM baton.target_bindings b "
    "WHERE b.tenant OPERATOR(pg_catalog.=) $1 AND b.target OPERATOR(pg_catalog.=) $2",
    2, {UUIDOID, TEXTOID}, nullptr};

}  // namespace

// Connects on first use, so that a call served directly opens no SPI connection.
Spi& DeliveryStore::spi() {
    if (!spi_) spi_.emplace();
    return *spi_;
}

// Opens the direct access on first use, once: the table is opened where the call first
// needs it, after the caller's fence and authorization checks.
delivery_direct::Table* DeliveryStore::direct(delivery_direct::Use use) {
    if (!tried_direct_) {
        tried_direct_ = true;
        table_ = delivery_direct::open(use);
    }
    return table_;
}

// Closes the direct access; the SPI connection ends with the store.
void DeliveryStore::close() {
    if (table_ != nullptr) delivery_direct::close(table_);
    table_ = nullptr;
}

// Keeps the last answer: a batch mostly names one target. From pg/access/authz_cache
// when it knows the binding; else read with the latest snapshot, by a statement on a
// Citus install (g_bound_role, the role's name resolved here) or by a probe of its
// primary key, and told to the cache. The target's bytes (an argument, or a
// row's target copied out) live as long as the call.
Oid DeliveryStore::bound_role(const pg_uuid_t* tenant, const char* target, int target_len) {
    if (role_target_ != nullptr && role_target_len_ == target_len && std::memcmp(role_target_, target, target_len) == 0)
        return role_;
    authz_cache::Ticket ticket = authz_cache::begin();
    if (authz_cache::bound_role(ticket, tenant, target, target_len, &role_)) {
        // known, and no binding changed since
    } else if (citus::distributed()) {
        Spi& s = spi();
        Datum values[2] = {UUIDPGetDatum(const_cast<pg_uuid_t*>(tenant)),
                           PointerGetDatum(guard([target, target_len] {
                               return cstring_to_text_with_len(target, target_len);
                           }))};
        role_ = s.run_latest(g_bound_role, values, nullptr) == 0 ? InvalidOid : auth::role_named(s.cstring_at(0, 1));
        authz_cache::remember_bound_role(ticket, tenant, target, target_len, role_);
    } else {
        role_ = delivery_direct::bound_role(tenant, target, target_len);
        authz_cache::remember_bound_role(ticket, tenant, target, target_len, role_);
    }
    role_target_ = target;
    role_target_len_ = target_len;
    return role_;
}

// Direct when the table opens and no `expected` filter asks for the statement's.
Claimed DeliveryStore::claim(const ClaimCall& call, ClaimRange range, claim_hint::Position from, std::int64_t n) {
    if (call.expected == nullptr)
        if (delivery_direct::Table* t = direct(delivery_direct::Use::kClaim); t != nullptr && delivery_direct::can_claim(t))
            return delivery_direct::claim(t, call, range, from, n);
    return claim_by_statement(call, range, from, n);
}

// Direct when the table opens; the row's role is then one probe of target_bindings.
FoundDelivery DeliveryStore::settle(pg_uuid_t* tenant, std::int64_t id, std::int64_t generation,
                                    delivery::Status outcome, Jsonb* result) {
    delivery_direct::Table* t = direct(delivery_direct::Use::kSettle);
    if (t == nullptr) return settle_by_statement(tenant, id, generation, outcome, result);
    FoundDelivery f = delivery_direct::settle(t, tenant, id, generation, outcome, result, false);
    if (f.found) f.role = bound_role(tenant, f.target, static_cast<int>(std::strlen(f.target)));
    return f;
}

// Direct: one settle per pair. Statements: one UPDATE for all pairs, then their rows.
void DeliveryStore::settle_batch(pg_uuid_t* tenant, const Int64Array& ids, const Int64Array& generations,
                                 delivery::Status outcome, FoundDelivery* out) {
    delivery_direct::Table* t = direct(delivery_direct::Use::kSettle);
    if (t == nullptr) return settle_batch_by_statement(tenant, ids, generations, outcome, out);
    for (int i = 0; i < ids.n; i++) {
        out[i] = delivery_direct::settle(t, tenant, DatumGetInt64(ids.values[i]), DatumGetInt64(generations.values[i]),
                                         outcome, nullptr, true);
        if (out[i].found) out[i].role = bound_role(tenant, out[i].target, static_cast<int>(std::strlen(out[i].target)));
    }
}

}  // namespace baton::pg
