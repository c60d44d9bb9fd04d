// The delivery store (see delivery_store.hpp): which implementation serves a call, and
// what both share. The statements themselves are in delivery_statements.cpp.
#include <cstring>

#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "pg/access/auth.hpp"
#include "pg/access/authz_cache.hpp"
#include "pg/citus/citus.hpp"
#include "pg/citus/local_group.hpp"
#include "pg/deliveries/delivery_direct.hpp"
#include "pg/deliveries/delivery_store.hpp"

namespace baton::pg {

namespace {

// What binds (tenant, target), as a statement: on a Citus install target_bindings'
// rows are in shards, which the direct probe cannot read. One row whether bound or not:
// the role by name (NULL: not bound), resolved on this node (auth::role_named(): the
// shard's node has its own oid), the weight, and whether claims are paused.
KeptPlan g_binding = {
    "SELECT b.role::pg_catalog.text, b.weight, b.paused_at IS NOT NULL OR EXISTS (SELECT 1 FROM baton.paused_targets p "
    "WHERE p.target OPERATOR(pg_catalog.=) $2) FROM (SELECT 1) one LEFT JOIN baton.target_bindings b "
    "ON b.tenant OPERATOR(pg_catalog.=) $1 AND b.target OPERATOR(pg_catalog.=) $2",
    2, {UUIDOID, TEXTOID}, nullptr};

}  // namespace

// Connects on first use, so that a call served directly opens no SPI connection.
Spi& DeliveryStore::spi() {
    if (!spi_) spi_.emplace();
    return *spi_;
}

// Opens the direct access on first use, once: the table is opened where the call first
// needs it, after the caller's fence and authorization checks.
delivery_direct::Table* DeliveryStore::direct(delivery_direct::Use use, const pg_uuid_t* tenant) {
    if (!tried_direct_) {
        tried_direct_ = true;
        table_ = delivery_direct::open(use);
        table_on_shards_ = table_ != nullptr && local_group::active(tenant);
        table_tenant_ = *tenant;
    }
    if (table_on_shards_ &&
        (std::memcmp(&table_tenant_, tenant, sizeof table_tenant_) != 0 || !local_group::active(tenant)))
        return nullptr;
    return table_;
}

void put_claimed(const ClaimCall& call, const Datum* values, const bool* nulls) {
    Datum row[kClaimColumns + 1];
    bool row_nulls[kClaimColumns + 1];
    int at = 0;
    if (call.with_tenant) {
        row[at] = UUIDPGetDatum(call.tenant);
        row_nulls[at++] = false;
    }
    std::memcpy(row + at, values, sizeof(Datum) * kClaimColumns);
    std::memcpy(row_nulls + at, nulls, sizeof(bool) * kClaimColumns);
    put_row(call.rsinfo, row, row_nulls);
}

// Closes the direct access; the SPI connection ends with the store.
void DeliveryStore::close() {
    if (table_ != nullptr) delivery_direct::close(table_);
    table_ = nullptr;
}

// Keeps the last answer: a batch mostly names one target. From pg/access/authz_cache
// when it knows the binding; else read with the latest snapshot, by a statement on a
// Citus install (g_binding, the role's name resolved here) or by probes of the primary
// keys, and told to the cache. The target's bytes (an argument, or a row's target
// copied out) live as long as the call.
const authz_cache::Binding& DeliveryStore::binding(const pg_uuid_t* tenant, const char* target, int target_len) {
    if (binding_target_ != nullptr && binding_target_len_ == target_len &&
        std::memcmp(&binding_tenant_, tenant, sizeof binding_tenant_) == 0 &&
        std::memcmp(binding_target_, target, target_len) == 0)
        return binding_;
    authz_cache::Ticket ticket = authz_cache::begin();
    if (authz_cache::binding(ticket, tenant, target, target_len, &binding_)) {
        // known, and no binding changed since
    } else if (local_group::routed(tenant)) {
        Spi& s = spi();
        Datum values[2] = {UUIDPGetDatum(const_cast<pg_uuid_t*>(tenant)),
                           PointerGetDatum(guard([target, target_len] {
                               return cstring_to_text_with_len(target, target_len);
                           }))};
        s.run_latest(g_binding, values, nullptr);
        bool bound = !s.is_null(0, 1);
        binding_ = {bound ? auth::role_named(s.cstring_at(0, 1)) : InvalidOid, bound ? s.int32_at(0, 2) : 1,
                    s.bool_at(0, 3)};
        authz_cache::remember_binding(ticket, tenant, target, target_len, binding_);
    } else {
        binding_ = delivery_direct::binding(tenant, target, target_len);
        authz_cache::remember_binding(ticket, tenant, target, target_len, binding_);
    }
    binding_tenant_ = *tenant;
    binding_target_ = target;
    binding_target_len_ = target_len;
    return binding_;
}

// Direct when the table opens and no `expected` filter asks for the statement's.
Claimed DeliveryStore::claim(const ClaimCall& call, ClaimRange range, claim_hint::Position from, std::int64_t n) {
    if (call.expected == nullptr)
        if (delivery_direct::Table* t = direct(delivery_direct::Use::kClaim, call.tenant); t != nullptr && delivery_direct::can_claim(t))
            return delivery_direct::claim(t, call, range, from, n);
    return claim_by_statement(call, range, from, n);
}

// Direct when the table opens; the row's role is then one probe of target_bindings.
FoundDelivery DeliveryStore::settle(pg_uuid_t* tenant, std::int64_t id, std::int64_t generation,
                                    delivery::Status outcome, Jsonb* result) {
    delivery_direct::Table* t = direct(delivery_direct::Use::kSettle, tenant);
    if (t == nullptr) return settle_by_statement(tenant, id, generation, outcome, result);
    FoundDelivery f = delivery_direct::settle(t, tenant, id, generation, outcome, result, false);
    if (f.found) f.role = binding(tenant, f.target, static_cast<int>(std::strlen(f.target))).role;
    return f;
}

// Direct: one settle per pair. Statements: one UPDATE for all pairs, then their rows.
void DeliveryStore::settle_batch(pg_uuid_t* tenant, const Int64Array& ids, const Int64Array& generations,
                                 delivery::Status outcome, FoundDelivery* out) {
    delivery_direct::Table* t = direct(delivery_direct::Use::kSettle, tenant);
    if (t == nullptr) return settle_batch_by_statement(tenant, ids, generations, outcome, out);
    for (int i = 0; i < ids.n; i++) {
        out[i] = delivery_direct::settle(t, tenant, DatumGetInt64(ids.values[i]), DatumGetInt64(generations.values[i]),
                                         outcome, nullptr, true);
        if (out[i].found) out[i].role = binding(tenant, out[i].target, static_cast<int>(std::strlen(out[i].target))).role;
    }
}

}  // namespace baton::pg
