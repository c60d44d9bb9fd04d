// Deliveries: enqueue, enqueue_batch, claim, renew, finish, retry, reap, delivery.
//
// Each entry point checks its arguments (22004, 22023), then the tenant's fence (DU002),
// then the target's binding (DU005), and only then reads or writes. The common case of
// a lease call is one fenced UPDATE; when it matches nothing, the row is read and the
// core's state machine says what the caller is owed (DU008, DU001, DU007 or the stored
// answer).
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/limits.hpp"
#include "core/tenant.hpp"
#include "pg/args.hpp"
#include "pg/auth.hpp"
#include "pg/claim_hints.hpp"
#include "pg/delivery_store.hpp"
#include "pg/fence.hpp"
#include "pg/read_only.hpp"
#include "pg/settings.hpp"
#include "pg/spi.hpp"

namespace baton::api {

namespace {

// The role bound to a delivery's target (NULL when unbound), as a subquery of a
// statement over baton.deliveries d.
#define ROLE_OF_D                                                                   \
    "(SELECT b.role FROM baton.target_bindings b "                                  \
    "WHERE b.tenant OPERATOR(pg_catalog.=) d.tenant AND b.target OPERATOR(pg_catalog.=) d.target)"
#define KEY_OF_D "d.tenant OPERATOR(pg_catalog.=) $1 AND d.id OPERATOR(pg_catalog.=) $2"

pg::KeptPlan g_run_exists = {
    "SELECT 1 FROM baton.runs r WHERE r.tenant OPERATOR(pg_catalog.=) $1 AND r.id OPERATOR(pg_catalog.=) $2",
    2, {UUIDOID, UUIDOID}, nullptr};

pg::KeptPlan g_insert = {
    "INSERT INTO baton.deliveries AS d "
    "(tenant, target, dedup_key, payload, binding, run_after, priority, max_attempts, run_id) "
    "VALUES ($1, $2, $3, $4, $5, COALESCE($6, pg_catalog.now()), $7, $8, $9) "
    "ON CONFLICT (tenant, target, dedup_key) DO NOTHING RETURNING d.id",
    9, {UUIDOID, TEXTOID, TEXTOID, JSONBOID, JSONBOID, TIMESTAMPTZOID, INT4OID, INT4OID, UUIDOID}, nullptr};

pg::KeptPlan g_existing = {
    "SELECT d.id, (d.payload OPERATOR(pg_catalog.=) $4) AND (d.binding OPERATOR(pg_catalog.=) $5) "
    "FROM baton.deliveries d WHERE d.tenant OPERATOR(pg_catalog.=) $1 "
    "AND d.target OPERATOR(pg_catalog.=) $2 AND d.dedup_key OPERATOR(pg_catalog.=) $3",
    5, {UUIDOID, TEXTOID, TEXTOID, JSONBOID, JSONBOID}, nullptr};

// The rows to claim are chosen and locked by the ARRAY() subquery, then updated by
// primary key: with a kept (generic) plan the planner cannot know $3, and a join
// against a CTE would be planned for thousands of rows (a hash join over the whole
// table); `id = ANY(ARRAY(...))` is an index probe per claimed row, whatever $3 is.
// The rows come back in key order; claim() puts them in claim order itself (a sort
// node and a CTE would cost more to start, per call, than sorting max_items rows).
// The last column is the priority, for that order. These statements are the claim's
// path when direct access is not available (pg/delivery_store.hpp).
// $5 is the clock the claim reads right after its hint (pg/claim_hints.hpp): run_after
// is compared with it rather than with the transaction's start.
#define CLAIM_SQL(OPEN, CLOSE, EXTRA)                                                             \
    "UPDATE baton.deliveries d SET status = 'claimed', "                                          \
    "generation = d.generation OPERATOR(pg_catalog.+) 1, "                                        \
    "attempts = d.attempts OPERATOR(pg_catalog.+) 1, "                                            \
    "lease_until = pg_catalog.now() OPERATOR(pg_catalog.+) $4 "                                   \
    "WHERE d.tenant OPERATOR(pg_catalog.=) $1 AND d.id OPERATOR(pg_catalog.=) " OPEN "("          \
    "SELECT c.id FROM baton.deliveries c "                                                        \
    "WHERE c.tenant OPERATOR(pg_catalog.=) $1 AND c.target OPERATOR(pg_catalog.=) $2 "            \
    "AND c.status OPERATOR(pg_catalog.=) 'pending' "                                              \
    "AND c.run_after OPERATOR(pg_catalog.<=) $5 " EXTRA                                           \
    "ORDER BY c.priority DESC, c.id LIMIT $3 FOR UPDATE SKIP LOCKED)" CLOSE                        \
    " RETURNING d.id, d.generation, d.lease_until, d.dedup_key, d.payload, d.binding, d.attempts, " \
    "d.run_id, d.priority"

// With `expected`: every top-level field of $6 equals the binding's field of that name.
#define EXPECTED_SQL                                                                             \
    "AND NOT EXISTS (SELECT 1 FROM pg_catalog.jsonb_each($6) e WHERE NOT COALESCE("              \
    "((c.binding OPERATOR(pg_catalog.->) e.key) OPERATOR(pg_catalog.=) e.value), false)) "
// From a claim hint at ($6, $7): the rest of its priority level, then the levels below
// (two index ranges; one row comparison cannot bound an index that mixes DESC and ASC).
#define LEVEL_SQL "AND c.priority OPERATOR(pg_catalog.=) $6 AND c.id OPERATOR(pg_catalog.>=) $7 "
#define BELOW_SQL "AND c.priority OPERATOR(pg_catalog.<) $6 "

#define CLAIM_TYPES UUIDOID, TEXTOID, INT4OID, INTERVALOID, TIMESTAMPTZOID
// One row: `id = (SELECT ...)`, a primary-key equality, the plan the planner picks even
// before the table's first ANALYZE (it might scan a whole tenant for `id = ANY` then).
// Several rows: `id = ANY (ARRAY(SELECT ...))`, an index probe per row.
struct ClaimPlans {
    pg::KeptPlan all, level, below, expected;
};
ClaimPlans g_claim_one = {
    {CLAIM_SQL("", "", ""), 5, {CLAIM_TYPES}, nullptr},
    {CLAIM_SQL("", "", LEVEL_SQL), 7, {CLAIM_TYPES, INT4OID, INT8OID}, nullptr},
    {CLAIM_SQL("", "", BELOW_SQL), 6, {CLAIM_TYPES, INT4OID}, nullptr},
    {CLAIM_SQL("", "", EXPECTED_SQL), 6, {CLAIM_TYPES, JSONBOID}, nullptr}};
ClaimPlans g_claim_many = {
    {CLAIM_SQL("ANY (ARRAY", ")", ""), 5, {CLAIM_TYPES}, nullptr},
    {CLAIM_SQL("ANY (ARRAY", ")", LEVEL_SQL), 7, {CLAIM_TYPES, INT4OID, INT8OID}, nullptr},
    {CLAIM_SQL("ANY (ARRAY", ")", BELOW_SQL), 6, {CLAIM_TYPES, INT4OID}, nullptr},
    {CLAIM_SQL("ANY (ARRAY", ")", EXPECTED_SQL), 6, {CLAIM_TYPES, JSONBOID}, nullptr}};

// The lease calls name the status 'claimed' as a parameter ($5, $6): a generic plan
// cannot prove a partial index's predicate from a parameter, so it probes the primary
// key. With the literal, a plan made while few rows were claimed scanned the whole
// (small then, large later) partial index deliveries_leases instead.
pg::KeptPlan g_renew = {
    "UPDATE baton.deliveries d SET lease_until = pg_catalog.now() OPERATOR(pg_catalog.+) $4 "
    "WHERE " KEY_OF_D " AND d.generation OPERATOR(pg_catalog.=) $3 "
    "AND d.status OPERATOR(pg_catalog.=) $5 RETURNING d.lease_until, d.target, " ROLE_OF_D,
    5, {UUIDOID, INT8OID, INT8OID, INTERVALOID, TEXTOID}, nullptr};

pg::KeptPlan g_finish = {
    "UPDATE baton.deliveries d SET status = $4, result = $5, lease_until = NULL, "
    "settled_at = pg_catalog.now() "
    "WHERE " KEY_OF_D " AND d.generation OPERATOR(pg_catalog.=) $3 "
    "AND d.status OPERATOR(pg_catalog.=) $6 RETURNING d.target, " ROLE_OF_D,
    6, {UUIDOID, INT8OID, INT8OID, TEXTOID, JSONBOID, TEXTOID}, nullptr};

// finish_batch: every (id, generation) pair of $2/$3 that still holds its row, in one
// statement (an index probe per id).
pg::KeptPlan g_finish_batch = {
    "UPDATE baton.deliveries d SET status = $4, lease_until = NULL, settled_at = pg_catalog.now() "
    "WHERE d.tenant OPERATOR(pg_catalog.=) $1 AND d.id OPERATOR(pg_catalog.=) ANY ($2) "
    "AND d.status OPERATOR(pg_catalog.=) $5 "
    "AND d.generation OPERATOR(pg_catalog.=) ($3)[pg_catalog.array_position($2, d.id)]",
    5, {UUIDOID, INT8ARRAYOID, INT8ARRAYOID, TEXTOID, TEXTOID}, nullptr};

pg::KeptPlan g_batch_rows = {
    "SELECT d.id, d.status, d.generation, d.attempts, d.max_attempts, d.target, " ROLE_OF_D
    " FROM baton.deliveries d WHERE d.tenant OPERATOR(pg_catalog.=) $1 AND d.id OPERATOR(pg_catalog.=) ANY ($2)",
    2, {UUIDOID, INT8ARRAYOID}, nullptr};

#define ROW_SQL                                                                                 \
    "SELECT d.status, d.generation, d.attempts, d.max_attempts, d.target, " ROLE_OF_D          \
    " FROM baton.deliveries d WHERE " KEY_OF_D

pg::KeptPlan g_row = {ROW_SQL, 2, {UUIDOID, INT8OID}, nullptr};
pg::KeptPlan g_row_for_update = {ROW_SQL " FOR UPDATE", 2, {UUIDOID, INT8OID}, nullptr};

pg::KeptPlan g_retry_apply = {
    "UPDATE baton.deliveries d SET status = $3, generation = $4, "
    "run_after = CASE WHEN $5 IS NULL THEN d.run_after "
    "ELSE pg_catalog.now() OPERATOR(pg_catalog.+) $5 END, "
    "lease_until = NULL, last_error = $6, "
    "settled_at = CASE WHEN $5 IS NULL THEN pg_catalog.now() END "
    "WHERE " KEY_OF_D,
    6, {UUIDOID, INT8OID, TEXTOID, INT8OID, INTERVALOID, TEXTOID}, nullptr};

// The tenants among the oldest expired leases, active ones only (a fenced tenant's
// leases must not hide everyone else's), the tenant with the oldest first.
pg::KeptPlan g_reap_tenants = {
    "SELECT e.tenant FROM (SELECT d.tenant, d.lease_until FROM baton.deliveries d "
    "JOIN baton.tenants t ON t.tenant OPERATOR(pg_catalog.=) d.tenant "
    "WHERE t.state OPERATOR(pg_catalog.=) 'active' AND d.status OPERATOR(pg_catalog.=) 'claimed' "
    "AND d.lease_until OPERATOR(pg_catalog.<) pg_catalog.now() "
    "ORDER BY d.lease_until LIMIT $1) e GROUP BY e.tenant ORDER BY pg_catalog.min(e.lease_until) LIMIT 256",
    1, {INT4OID}, nullptr};

// Returns up to $2 expired leases of one tenant, oldest expiry first, skipping rows
// others hold. The CASE is give_back_status() of src/core/delivery.cpp, set-wise.
pg::KeptPlan g_reap = {
    "UPDATE baton.deliveries d SET "
    "status = CASE WHEN d.attempts OPERATOR(pg_catalog.>=) d.max_attempts THEN 'failed' ELSE 'pending' END, "
    "generation = d.generation OPERATOR(pg_catalog.+) 1, lease_until = NULL, "
    "last_error = 'lease expired', "
    "settled_at = CASE WHEN d.attempts OPERATOR(pg_catalog.>=) d.max_attempts THEN pg_catalog.now() END "
    "WHERE d.tenant OPERATOR(pg_catalog.=) $1 AND d.id OPERATOR(pg_catalog.=) ANY (ARRAY("
    "SELECT c.id FROM baton.deliveries c WHERE c.tenant OPERATOR(pg_catalog.=) $1 "
    "AND c.status OPERATOR(pg_catalog.=) 'claimed' AND c.lease_until OPERATOR(pg_catalog.<) pg_catalog.now() "
    "ORDER BY c.lease_until LIMIT $2 FOR UPDATE SKIP LOCKED))",
    2, {UUIDOID, INT4OID}, nullptr};

pg::KeptPlan g_get = {"SELECT d FROM baton.deliveries d WHERE " KEY_OF_D, 2, {UUIDOID, INT8OID}, nullptr};

// 'claimed' as a text datum, for the lease calls' status parameter.
Datum claimed_text() { return pg::text_datum(delivery::status_name(delivery::Status::kClaimed)); }

// One delivery to enqueue, as plain Postgres values (from arguments or a batch item).
struct Item {
    text* target;
    text* dedup_key;
    Jsonb* payload;
    Jsonb* binding;
    bool has_run_after;
    TimestampTz run_after;
    std::int32_t priority;
    std::int32_t max_attempts;
    pg_uuid_t* run_id;  // nullptr: no run
};

// Refuses (22023) an item outside the documented limits.
void check_item(const Item& item) {
    delivery::check_target_chars(pg::text_chars(item.target));
    delivery::check_dedup_key_chars(pg::text_chars(item.dedup_key));
    pg::check_object_argument("payload", item.payload);
    pg::check_binding(item.binding);
    if (item.has_run_after && TIMESTAMP_NOT_FINITE(item.run_after))
        throw_invalid_argument("run_after", "run_after is a finite timestamp, or NULL for now.");
    delivery::check_max_attempts(item.max_attempts);
}

// Queues NOTIFY baton_enqueue {"tenant": ..., "target": ...}; Postgres sends it at commit.
void notify_enqueued(const pg_uuid_t* tenant, const text* target) {
    if (!settings::notify) return;
    char* tenant_id = pg::fence::tenant_text(tenant);
    pg::guard([tenant_id, target] {
        StringInfoData buf;
        initStringInfo(&buf);
        appendStringInfoString(&buf, "{\"tenant\": \"");
        appendStringInfoString(&buf, tenant_id);
        appendStringInfoString(&buf, "\", \"target\": ");
        escape_json(&buf, text_to_cstring(target));
        appendStringInfoChar(&buf, '}');
        Async_Notify("baton_enqueue", buf.data);
    });
}

// Throws DU008 unless run_id names a run of the tenant.
void require_run(pg::Spi& spi, pg_uuid_t* tenant, pg_uuid_t* run_id) {
    Datum values[2] = {UUIDPGetDatum(tenant), UUIDPGetDatum(run_id)};
    if (spi.run(g_run_exists, values, nullptr, 1) == 0)
        throw Error(SqlState::kNotFound,
                    "run " + pg::uuid_text(run_id) + " does not exist in tenant " + pg::uuid_text(tenant),
                    "A delivery's run_id names a run of the same tenant.");
}

struct Enqueued {
    std::int64_t id;
    bool inserted;
};

// Inserts the item, or finds the delivery its key already names: the same payload and
// binding return that id (nothing changes); different ones are DU009. The fence has
// been checked by the caller.
Enqueued enqueue_item(pg::Spi& spi, pg_uuid_t* tenant, const Item& item) {
    if (item.run_id != nullptr) require_run(spi, tenant, item.run_id);
    Datum values[9] = {UUIDPGetDatum(tenant),       PointerGetDatum(item.target),
                       PointerGetDatum(item.dedup_key), JsonbPGetDatum(item.payload),
                       JsonbPGetDatum(item.binding),  TimestampTzGetDatum(item.run_after),
                       Int32GetDatum(item.priority),  Int32GetDatum(item.max_attempts),
                       UUIDPGetDatum(item.run_id)};
    char nulls[10] = "         ";
    if (!item.has_run_after) nulls[5] = 'n';
    if (item.run_id == nullptr) nulls[8] = 'n';
    // A concurrent producer's row can vanish between the insert and the look-up only if
    // it is removed at that moment; then the insert is tried once more.
    for (int tries = 0; tries < 3; tries++) {
        if (spi.run(g_insert, values, nulls) == 1) {
            Enqueued e{spi.int64_at(0, 1), true};
            notify_enqueued(tenant, item.target);
            return e;
        }
        if (spi.run(g_existing, values, nullptr) == 1) {
            if (!spi.bool_at(0, 2))
                throw Error(SqlState::kDedupConflict,
                            "dedup key " + pg::quoted(item.dedup_key) + " of target " + pg::quoted(item.target) +
                                " is already used with another payload or binding in tenant " + pg::uuid_text(tenant),
                            "An enqueue repeated with the same key must carry the same payload and binding.",
                            "Use a new dedup key for different work.");
            return {spi.int64_at(0, 1), false};
        }
    }
    throw Error(SqlState::kInternal, "enqueue could neither insert nor find its delivery with dedup key " +
                                         pg::quoted(item.dedup_key) + " of target " + pg::quoted(item.target));
}

// A row read by g_row / g_row_for_update, with its target and bound role.
struct StoredRow {
    delivery::Row row;
    char* target;
    Oid role;
};

// Reads (tenant, id); DU008 when it does not exist; DU005 when the caller may not work
// on its target.
StoredRow read_row(pg::Spi& spi, pg::KeptPlan& plan, pg_uuid_t* tenant, std::int64_t id, Oid caller) {
    Datum values[2] = {UUIDPGetDatum(tenant), Int64GetDatum(id)};
    if (spi.run(plan, values, nullptr) == 0)
        throw Error(SqlState::kNotFound,
                    "delivery " + std::to_string(id) + " does not exist in tenant " + pg::uuid_text(tenant),
                    "Deliveries are addressed by (tenant, id).");
    auto status = delivery::parse_status(spi.cstring_at(0, 1));
    if (!status) throw Error(SqlState::kInternal, "delivery " + std::to_string(id) + " has an unknown status");
    StoredRow r{{*status, spi.int64_at(0, 2), spi.int32_at(0, 3), spi.int32_at(0, 4)},
                spi.cstring_at(0, 5), spi.oid_at(0, 6)};
    pg::auth::require_member(caller, r.role, r.target);
    return r;
}

// DU001 for a holder whose generation no longer holds the delivery.
[[noreturn]] void throw_lease_lost(std::int64_t id, std::int64_t caller_gen, const delivery::Row& row) {
    throw Error(SqlState::kLeaseLost, "lease on delivery " + std::to_string(id) + " is lost",
                "The call carries generation " + std::to_string(caller_gen) + "; the delivery is " +
                    delivery::status_name(row.status) + " at generation " + std::to_string(row.generation) + ".",
                "Stop working on it: another holder, a retry or the reaper has taken it over.");
}

// Common arguments of renew, finish and retry.
struct LeaseCall {
    pg_uuid_t* tenant;
    std::int64_t id;
    std::int64_t generation;
};

LeaseCall lease_call_args(FunctionCallInfo fcinfo) {
    return {pg::uuid_arg(fcinfo, 0, "tenant"), pg::int64_arg(fcinfo, 1, "id"),
            pg::int64_arg(fcinfo, 2, "generation")};
}

// ---------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------

// baton.enqueue(tenant, target, dedup_key, payload, binding, run_after, priority,
// max_attempts, run_id): adds a pending delivery, idempotent on (tenant, target,
// dedup_key); returns its id.
Datum enqueue(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.enqueue");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    Item item{};
    item.target = pg::text_arg(fcinfo, 1, "target");
    item.dedup_key = pg::text_arg(fcinfo, 2, "dedup_key");
    item.payload = pg::jsonb_arg(fcinfo, 3, "payload");
    item.binding = pg::jsonb_arg(fcinfo, 4, "binding");
    item.has_run_after = !PG_ARGISNULL(5);
    item.run_after = item.has_run_after ? PG_GETARG_TIMESTAMPTZ(5) : 0;
    item.priority = pg::int32_arg(fcinfo, 6, "priority");
    item.max_attempts = pg::int32_arg(fcinfo, 7, "max_attempts");
    item.run_id = PG_ARGISNULL(8) ? nullptr : PG_GETARG_UUID_P(8);
    check_item(item);
    pg::fence::require_writable(tenant);
    pg::Spi spi;
    Enqueued e = enqueue_item(spi, tenant, item);
    PG_RETURN_INT64(e.id);
}

// One field of a batch item, as Postgres found it.
struct Field {
    bool present;  // present and not JSON null
    JsonbValue value;
};

Field item_field(JsonbContainer* obj, const char* key) {
    return pg::guard([obj, key] {
        Field f{};
        JsonbValue* v = getKeyJsonValueFromContainer(obj, key, static_cast<int>(strlen(key)), &f.value);
        f.present = v != nullptr && v->type != jbvNull;
        return f;
    });
}

// Reads batch item i (an object) into an Item, refusing (22023) unknown keys and
// values of the wrong kind.
Item read_batch_item(JsonbValue* element) {
    static const char* const kKeys[] = {"target", "dedup_key", "payload", "binding",
                                        "run_after", "priority", "max_attempts", "run_id"};
    if (element->type != jbvBinary || !JsonContainerIsObject(element->val.binary.data))
        throw_invalid_argument("items", "Each item is a JSON object.");
    JsonbContainer* obj = element->val.binary.data;
    // Unknown keys: a typo must not silently drop a field.
    char* unknown = pg::guard([obj] {
        JsonbIterator* it = JsonbIteratorInit(obj);
        JsonbValue tok;
        JsonbIteratorToken r;
        char* bad = nullptr;
        while ((r = JsonbIteratorNext(&it, &tok, true)) != WJB_DONE) {
            if (r != WJB_KEY || bad != nullptr) continue;
            bool known = false;
            for (const char* k : kKeys)
                if (strlen(k) == static_cast<size_t>(tok.val.string.len) &&
                    memcmp(k, tok.val.string.val, tok.val.string.len) == 0)
                    known = true;
            if (!known) bad = pnstrdup(tok.val.string.val, tok.val.string.len);
        }
        return bad;
    });
    if (unknown != nullptr)
        throw_invalid_argument("items", "Unknown key \"" + std::string(unknown).substr(0, 64) +
                                            "\"; an item has target, dedup_key, payload, binding, "
                                            "run_after, priority, max_attempts and run_id.");

    Item item{};
    item.priority = 0;
    item.max_attempts = 3;
    auto string_field = [obj](const char* key, bool required) -> char* {
        Field f = item_field(obj, key);
        if (!f.present) {
            if (required) throw_invalid_argument("items", std::string("The item has no ") + key + ".");
            return nullptr;
        }
        if (f.value.type != jbvString)
            throw_invalid_argument("items", std::string(key) + " is a JSON string.");
        const JsonbValue v = f.value;
        return pg::guard([v] { return pnstrdup(v.val.string.val, v.val.string.len); });
    };
    auto json_field = [obj](const char* key) -> Jsonb* {
        Field f = item_field(obj, key);
        if (!f.present) return pg::guard([] { return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum("{}"))); });
        JsonbValue v = f.value;
        return pg::guard([v]() mutable { return JsonbValueToJsonb(&v); });
    };
    auto int_field = [obj](const char* key, std::int32_t fallback) -> std::int32_t {
        Field f = item_field(obj, key);
        if (!f.present) return fallback;
        if (f.value.type != jbvNumeric) throw_invalid_argument("items", std::string(key) + " is a JSON number.");
        Numeric n = f.value.val.numeric;
        char* digits = pg::guard([n] { return DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(n))); });
        std::optional<std::int64_t> v = json::as_int64(json::make_number(digits));
        if (!v || *v < INT32_MIN || *v > INT32_MAX)
            throw_invalid_argument("items", std::string(key) + " is an integer in the range of int4.");
        return static_cast<std::int32_t>(*v);
    };
    // Parses text with a type's input function, reporting its failure as 22023.
    auto parse = [](const char* key, char* value, PGFunction in) -> Datum {
        Datum result = 0;
        if (pg::attempt([value, in, &result] {
                result = DirectFunctionCall3(in, CStringGetDatum(value), ObjectIdGetDatum(InvalidOid),
                                             Int32GetDatum(-1));
            }) != nullptr)
            throw_invalid_argument("items", std::string(key) + " does not read as its type.");
        return result;
    };

    char* target = string_field("target", true);
    char* dedup_key = string_field("dedup_key", true);
    item.target = DatumGetTextPP(pg::text_datum(target));
    item.dedup_key = DatumGetTextPP(pg::text_datum(dedup_key));
    item.payload = json_field("payload");
    item.binding = json_field("binding");
    if (char* ra = string_field("run_after", false)) {
        item.has_run_after = true;
        item.run_after = DatumGetTimestampTz(parse("run_after", ra, timestamptz_in));
    }
    item.priority = int_field("priority", 0);
    item.max_attempts = int_field("max_attempts", 3);
    if (char* run = string_field("run_id", false)) item.run_id = DatumGetUUIDP(parse("run_id", run, uuid_in));
    check_item(item);
    return item;
}

// baton.enqueue_batch(tenant, items): enqueues every item of a JSON array, all or
// nothing; returns (id, inserted) per item in order.
Datum enqueue_batch(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.enqueue_batch");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    Jsonb* items = pg::jsonb_arg(fcinfo, 1, "items");
    if (!JB_ROOT_IS_ARRAY(items) || JB_ROOT_IS_SCALAR(items))
        throw_invalid_argument("items", std::string("items is a JSON array of objects, not ") +
                                            cause::kind_name(pg::jsonb_kind(items)) + ".");
    int n = JB_ROOT_COUNT(items);
    if (n > limits::kMaxBatchItems)
        throw_invalid_argument("items", "A batch has at most " + std::to_string(limits::kMaxBatchItems) +
                                            " items; this one has " + std::to_string(n) + ".");
    // Read and check every item before the first write.
    Item* parsed = pg::guard([n] { return static_cast<Item*>(palloc0(sizeof(Item) * (n + 1))); });
    for (int i = 0; i < n; i++) {
        JsonbValue* element = pg::guard([items, i] { return getIthJsonbValueFromContainer(&items->root, i); });
        try {
            parsed[i] = read_batch_item(element);
        } catch (const Error& e) {
            throw Error(e.state(), e.message(), "Item " + std::to_string(i) + ": " + e.detail(), e.hint());
        }
    }
    pg::fence::require_writable(tenant);
    ReturnSetInfo* rsinfo = pg::materialize(fcinfo);
    pg::Spi spi;
    for (int i = 0; i < n; i++) {
        Enqueued e;
        try {
            e = enqueue_item(spi, tenant, parsed[i]);
        } catch (const Error& err) {
            throw Error(err.state(), err.message(), "Item " + std::to_string(i) + ": " + err.detail(), err.hint());
        }
        Datum values[2] = {Int64GetDatum(e.id), BoolGetDatum(e.inserted)};
        bool nulls[2] = {false, false};
        pg::put_row(rsinfo, values, nulls);
    }
    return static_cast<Datum>(0);
}

// One claim call: its arguments, where its rows go, and how it reaches the table.
struct ClaimCall {
    pg_uuid_t* tenant;
    text* target;
    Interval* lease;
    ReturnSetInfo* rsinfo;
    TimestampTz now;                    // the clock run_after is compared with (claim_hints::begin)
    pg::delivery_store::Table* table;   // direct access; nullptr: the SPI statements
    TimestampTz lease_until;            // now() + lease, for direct access
};

// What one scan claimed: how many rows, and the position of the last (kEnd for none).
struct Got {
    std::int64_t n;
    claim_hint::Position last;
};

// Claims up to n rows of one range through direct access, in claim order (the index's
// order), telling the claim hints about each row before it is written, as the fence
// trigger does for a statement's writes.
Got claim_direct(ClaimCall& c, pg::delivery_store::Range range, claim_hint::Position from, std::int64_t n) {
    namespace store = pg::delivery_store;
    store::Cursor* cursor = store::begin_claim(c.table, c.tenant, c.target, range, from, static_cast<int>(n));
    Got got{0, claim_hint::kEnd};
    const char* target = VARDATA_ANY(c.target);
    int target_len = static_cast<int>(VARSIZE_ANY_EXHDR(c.target));
    auto emit = [&c, &got](const store::Claimed& row) {
        Datum values[8] = {Int64GetDatum(row.id),   Int64GetDatum(row.generation), TimestampTzGetDatum(row.lease_until),
                           row.dedup_key,           row.payload,                   row.binding,
                           Int32GetDatum(row.attempt), row.run_id};
        bool nulls[8] = {false, false, false, false, false, false, false, !row.has_run};
        pg::put_row(c.rsinfo, values, nulls);
        got.n++;
        got.last = row.at;
    };
    std::int64_t reserved = 0;
    while (reserved < n) {
        store::Candidate candidate = store::next_candidate(cursor, c.now);
        if (!candidate.found) break;
        pg::claim_hints::row_taken(c.tenant, target, target_len, candidate.at, candidate.run_after);
        if (store::reserve(cursor, c.lease_until)) reserved++;
    }
    for (std::int64_t i = 0; i < reserved; i++) {
        store::Claimed row;
        store::complete(cursor, static_cast<int>(i), c.lease_until, &row);
        emit(row);
    }
    store::end_claim(cursor);
    return got;
}

// The rows one claim statement returned, in claim order (priority descending, then
// enqueue order), into the result.
Got emit_claimed(pg::Spi& spi, std::uint64_t n, ReturnSetInfo* rsinfo) {
    if (n == 0) return {0, claim_hint::kEnd};
    std::vector<std::uint64_t> order(n);
    for (std::uint64_t row = 0; row < n; row++) order[row] = row;
    std::sort(order.begin(), order.end(), [&spi](std::uint64_t a, std::uint64_t b) {
        std::int32_t pa = spi.int32_at(a, 9), pb = spi.int32_at(b, 9);
        return pa != pb ? pa > pb : spi.int64_at(a, 1) < spi.int64_at(b, 1);
    });
    for (std::uint64_t row : order) spi.emit_row(rsinfo, row);
    std::uint64_t last = order.back();
    return {static_cast<std::int64_t>(n), {spi.int32_at(last, 9), spi.int64_at(last, 1)}};
}

// Claims up to n rows of one range with an SPI statement (expected: the filtered one).
Got claim_spi(ClaimCall& c, pg::delivery_store::Range range, claim_hint::Position from, std::int64_t n,
              Jsonb* expected) {
    ClaimPlans& plans = n == 1 ? g_claim_one : g_claim_many;
    Datum values[7] = {UUIDPGetDatum(c.tenant), PointerGetDatum(c.target), Int32GetDatum(static_cast<std::int32_t>(n)),
                       IntervalPGetDatum(c.lease), TimestampTzGetDatum(c.now), 0, 0};
    pg::KeptPlan* plan = &plans.all;
    if (expected != nullptr) {
        values[5] = JsonbPGetDatum(expected);
        plan = &plans.expected;
    } else if (range != pg::delivery_store::Range::kAll) {
        values[5] = Int32GetDatum(static_cast<std::int32_t>(from.priority));
        values[6] = Int64GetDatum(from.id);
        plan = range == pg::delivery_store::Range::kLevel ? &plans.level : &plans.below;
    }
    pg::Spi spi;
    return emit_claimed(spi, spi.run(*plan, values, nullptr), c.rsinfo);
}

// baton.claim(tenant, target, lease, max_items, expected): leases up to max_items
// pending deliveries of the target, highest priority then oldest first, skipping rows
// other claimers hold; each gets generation + 1 and attempts + 1.
//
// With claim hints (pg/claim_hints.hpp) the scan starts where no claimable row can be
// before, not over the dead entries of rows claimed before; if that finds fewer rows
// than asked for, the claim scans again from the top (once a second per target at most),
// so a hint never hides a row for long.
Datum claim(FunctionCallInfo fcinfo, Oid caller) {
    pg::require_read_write("baton.claim");
    namespace store = pg::delivery_store;
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    text* target = pg::text_arg(fcinfo, 1, "target");
    Interval* lease = pg::interval_arg(fcinfo, 2, "lease");
    std::int32_t max_items = pg::int32_arg(fcinfo, 3, "max_items");
    Jsonb* expected = PG_ARGISNULL(4) ? nullptr : pg::jsonb_arg(fcinfo, 4, "expected");
    delivery::check_target_chars(pg::text_chars(target));
    delivery::check_lease_usec(pg::interval_usec(lease));
    delivery::check_max_items(max_items);
    if (expected != nullptr) {
        pg::check_object_argument("expected", expected);
        if (pg::jsonb_is_empty_object(expected))
            throw_invalid_argument("expected", "expected is NULL or an object with at least one field.");
    }
    pg::fence::require_writable(tenant);
    // A caller who may not work on the target learns nothing, not even that it is empty.
    const char* target_chars = VARDATA_ANY(target);
    int target_len = static_cast<int>(VARSIZE_ANY_EXHDR(target));
    pg::auth::require_member(caller, store::bound_role(tenant, target_chars, target_len), pg::text_view(target));

    ClaimCall c{tenant, target, lease, pg::materialize(fcinfo), 0, nullptr, 0};
    // A claim filtered by `expected` passes over rows others may claim: it uses no hint,
    // and its filter is the SPI statement's.
    pg::claim_hints::Scan scan = pg::claim_hints::begin(tenant, target_chars, target_len, expected == nullptr);
    c.now = scan.now;
    if (expected == nullptr) c.table = store::open();
    if (c.table != nullptr) {
        Datum start = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
        c.lease_until = pg::guard([start, lease] {
            return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval, start, IntervalPGetDatum(lease)));
        });
    }
    auto scan_range = [&c, expected](store::Range range, claim_hint::Position from, std::int64_t n) {
        return c.table != nullptr ? claim_direct(c, range, from, n) : claim_spi(c, range, from, n, expected);
    };

    std::int64_t got = 0;
    claim_hint::Position start = scan.ticket.start;
    bool hinted = scan.entry != nullptr && start.priority <= PG_INT32_MAX && start.priority >= PG_INT32_MIN;
    if (hinted) {
        // The rest of the hint's priority level, then the levels below it.
        Got level = scan_range(store::Range::kLevel, start, max_items);
        got = level.n;
        claim_hint::Position last = level.last;
        if (got < max_items) {
            Got below = scan_range(store::Range::kBelow, start, max_items - got);
            got += below.n;
            if (below.n > 0) last = below.last;
        }
        pg::claim_hints::raise(scan, got < max_items ? claim_hint::kEnd : last);
    }
    if (got < max_items && (!hinted || pg::claim_hints::may_scan_from_top(scan))) {
        // From the top: without a hint, or behind it (a row the hint cannot see, or one
        // put back while this claim ran, which only a later claim would otherwise see).
        Got top = scan_range(store::Range::kAll, claim_hint::kTop, max_items - got);
        if (!hinted && scan.entry != nullptr) {
            scan.ticket.start = claim_hint::kTop;
            pg::claim_hints::raise(scan, top.n < max_items - got ? claim_hint::kEnd : top.last);
        }
        got += top.n;
    }
    if (c.table != nullptr) store::close(c.table);
    return static_cast<Datum>(0);
}

// baton.renew(tenant, id, generation, lease): extends the lease of the holder of that
// generation to now() + lease; returns the new lease_until.
Datum renew(FunctionCallInfo fcinfo, Oid caller) {
    pg::require_read_write("baton.renew");
    LeaseCall call = lease_call_args(fcinfo);
    Interval* lease = pg::interval_arg(fcinfo, 3, "lease");
    delivery::check_lease_usec(pg::interval_usec(lease));
    pg::fence::require_writable(call.tenant);
    pg::Spi spi;
    Datum values[5] = {UUIDPGetDatum(call.tenant), Int64GetDatum(call.id), Int64GetDatum(call.generation),
                       IntervalPGetDatum(lease), claimed_text()};
    if (spi.run(g_renew, values, nullptr) == 1) {
        pg::auth::require_member(caller, spi.oid_at(0, 3), spi.cstring_at(0, 2));
        bool isnull = false;
        PG_RETURN_TIMESTAMPTZ(DatumGetTimestampTz(spi.value(0, 1, &isnull)));
    }
    StoredRow r = read_row(spi, g_row, call.tenant, call.id, caller);
    if (delivery::renew_verdict(r.row, call.generation) == delivery::Verdict::kSettled)
        throw Error(SqlState::kInvalidState, "delivery " + std::to_string(call.id) + " is already " +
                                                 delivery::status_name(r.row.status),
                    "A settled delivery has no lease to renew.");
    throw_lease_lost(call.id, call.generation, r.row);
}

// Checks that the caller may work on the target of a settling call's delivery (DU005,
// whether or not it was settled: the error rolls the write back). `checked` is the
// last target checked in this call, whose role need not be read again.
void require_target(const pg_uuid_t* tenant, const char* target, Oid caller, std::string& checked) {
    if (!checked.empty() && checked == target) return;
    Oid role = pg::delivery_store::bound_role(tenant, target, static_cast<int>(std::strlen(target)));
    pg::auth::require_member(caller, role, target);
    checked = target;
}

// A delivery as delivery_store::settle found it, authorized (require_target): DU008
// when it does not exist, else its state.
delivery::Row settled_row(const pg::delivery_store::Settled& s, const pg_uuid_t* tenant, std::int64_t id, Oid caller,
                          std::string& checked) {
    if (!s.found)
        throw Error(SqlState::kNotFound,
                    "delivery " + std::to_string(id) + " does not exist in tenant " + pg::uuid_text(tenant),
                    "Deliveries are addressed by (tenant, id).");
    require_target(tenant, s.target, caller, checked);
    auto status = delivery::parse_status(s.status);
    if (!status) throw Error(SqlState::kInternal, "delivery " + std::to_string(id) + " has an unknown status");
    return {*status, s.generation, s.attempts, s.max_attempts};
}

// An int8[] argument as plain values: one dimension, no NULL element (22023).
struct Int64s {
    Datum* values;
    int n;
};

Int64s int64_array_arg(FunctionCallInfo fcinfo, int n, const char* name) {
    pg::require(fcinfo, n, name);
    Datum d = PG_GETARG_DATUM(n);
    ArrayType* array = pg::guard([d] { return DatumGetArrayTypeP(d); });
    if (ARR_NDIM(array) > 1) throw_invalid_argument(name, std::string(name) + " is a one-dimensional array.");
    Int64s out{nullptr, 0};
    bool* nulls = nullptr;
    pg::guard([array, &out, &nulls] {
        deconstruct_array(array, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &out.values, &nulls, &out.n);
    });
    for (int i = 0; i < out.n; i++)
        if (nulls[i]) throw_invalid_argument(name, std::string(name) + " holds no NULL.");
    return out;
}

// baton.finish_batch(tenant, ids, generations, outcome): finish for many deliveries in
// one statement. Each (id, generation) pair is settled like finish, but a pair whose
// lease is lost answers 'lease_lost' (and an unknown id 'not_found') instead of failing
// the others; a bound target the caller may not work on fails the whole call (DU005).
Datum finish_batch(FunctionCallInfo fcinfo, Oid caller) {
    pg::require_read_write("baton.finish_batch");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    Int64s ids = int64_array_arg(fcinfo, 1, "ids");
    Int64s generations = int64_array_arg(fcinfo, 2, "generations");
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
    if (pg::delivery_store::Table* table = pg::delivery_store::open()) {
        // Each pair settled, or answered from its row as settle() found it.
        std::string checked;
        for (int i = 0; i < ids.n; i++) {
            std::int64_t id = DatumGetInt64(ids.values[i]);
            std::int64_t generation = DatumGetInt64(generations.values[i]);
            pg::delivery_store::Settled s = pg::delivery_store::settle(table, tenant, id, generation,
                                                                        delivery::status_name(outcome), nullptr, true);
            const char* answer = "not_found";
            if (s.found) {
                delivery::Row row = settled_row(s, tenant, id, caller, checked);
                answer = s.applied || delivery::settle_verdict(row, generation) == delivery::Verdict::kReturnStored
                             ? delivery::status_name(row.status)
                             : "lease_lost";
            }
            Datum out[2] = {Int64GetDatum(id), pg::text_datum(answer)};
            bool nulls[2] = {false, false};
            pg::put_row(rsinfo, out, nulls);
        }
        pg::delivery_store::close(table);
        return static_cast<Datum>(0);
    }
    pg::Spi spi;
    Datum values[5] = {UUIDPGetDatum(tenant), PG_GETARG_DATUM(1), PG_GETARG_DATUM(2),
                       pg::text_datum(delivery::status_name(outcome)), claimed_text()};
    spi.run(g_finish_batch, values, nullptr);
    // Every pair is now answered from its row: settled at its generation (here or
    // before), the stored status; otherwise its lease is lost. Reading the rows also
    // checks the caller may work on their targets (DU005 rolls the batch back).
    std::uint64_t n = spi.run(g_batch_rows, values, nullptr);
    std::unordered_map<std::int64_t, delivery::Row> rows;
    for (std::uint64_t row = 0; row < n; row++) {
        pg::auth::require_member(caller, spi.oid_at(row, 7), spi.cstring_at(row, 6));
        auto status = delivery::parse_status(spi.cstring_at(row, 2));
        if (!status)
            throw Error(SqlState::kInternal,
                        "delivery " + std::to_string(spi.int64_at(row, 1)) + " has an unknown status");
        rows[spi.int64_at(row, 1)] = {*status, spi.int64_at(row, 3), spi.int32_at(row, 4), spi.int32_at(row, 5)};
    }
    for (int i = 0; i < ids.n; i++) {
        std::int64_t id = DatumGetInt64(ids.values[i]);
        std::int64_t generation = DatumGetInt64(generations.values[i]);
        const char* answer = "not_found";
        auto found = rows.find(id);
        if (found != rows.end()) {
            const delivery::Row& r = found->second;
            answer = delivery::settle_verdict(r, generation) == delivery::Verdict::kReturnStored
                         ? delivery::status_name(r.status)
                         : "lease_lost";
        }
        Datum out[2] = {Int64GetDatum(id), pg::text_datum(answer)};
        bool nulls[2] = {false, false};
        pg::put_row(rsinfo, out, nulls);
    }
    return static_cast<Datum>(0);
}

// The status a settling call answers, as text in the caller's memory context (made
// after the SPI connection has ended, whose memory goes with it).
Datum status_text(delivery::Status status) { return pg::text_datum(delivery::status_name(status)); }

// baton.finish(tenant, id, generation, outcome, result): settles the delivery as
// finished or failed, once; the settling generation's repeats return the stored status.
delivery::Status finish_delivery(FunctionCallInfo fcinfo, Oid caller) {
    LeaseCall call = lease_call_args(fcinfo);
    text* outcome_text = pg::text_arg(fcinfo, 3, "outcome");
    Jsonb* result = PG_ARGISNULL(4) ? nullptr : pg::jsonb_arg(fcinfo, 4, "result");
    delivery::Status outcome = delivery::parse_outcome(pg::text_view(outcome_text));
    if (result != nullptr) pg::check_result(result);
    pg::fence::require_writable(call.tenant);
    if (pg::delivery_store::Table* table = pg::delivery_store::open()) {
        pg::delivery_store::Settled s = pg::delivery_store::settle(
            table, call.tenant, call.id, call.generation, delivery::status_name(outcome), result, false);
        pg::delivery_store::close(table);
        std::string checked;
        delivery::Row row = settled_row(s, call.tenant, call.id, caller, checked);
        if (s.applied) return outcome;
        if (delivery::settle_verdict(row, call.generation) != delivery::Verdict::kReturnStored)
            throw_lease_lost(call.id, call.generation, row);
        return row.status;
    }
    pg::Spi spi;
    Datum values[6] = {UUIDPGetDatum(call.tenant), Int64GetDatum(call.id), Int64GetDatum(call.generation),
                       pg::text_datum(delivery::status_name(outcome)), result ? JsonbPGetDatum(result) : 0,
                       claimed_text()};
    char nulls[7] = "      ";
    if (result == nullptr) nulls[4] = 'n';
    if (spi.run(g_finish, values, nulls) == 1) {
        pg::auth::require_member(caller, spi.oid_at(0, 2), spi.cstring_at(0, 1));
        return outcome;
    }
    StoredRow r = read_row(spi, g_row, call.tenant, call.id, caller);
    if (delivery::settle_verdict(r.row, call.generation) != delivery::Verdict::kReturnStored)
        throw_lease_lost(call.id, call.generation, r.row);
    return r.row.status;
}

Datum finish(FunctionCallInfo fcinfo, Oid caller) {
    pg::require_read_write("baton.finish");
    return status_text(finish_delivery(fcinfo, caller));
}

// baton.retry(tenant, id, generation, error, delay): gives the attempt back: pending
// after delay (NULL: exponential backoff) under generation + 1, or failed at the same
// generation once max_attempts are spent. Returns the new status.
delivery::Status retry_delivery(FunctionCallInfo fcinfo, Oid caller) {
    LeaseCall call = lease_call_args(fcinfo);
    text* error = pg::text_arg(fcinfo, 3, "error");
    Interval* delay = PG_ARGISNULL(4) ? nullptr : PG_GETARG_INTERVAL_P(4);
    delivery::check_error_bytes(VARSIZE_ANY_EXHDR(error));
    if (delay != nullptr) delivery::check_delay_usec(pg::interval_usec(delay));
    pg::fence::require_writable(call.tenant);
    pg::Spi spi;
    StoredRow r = read_row(spi, g_row_for_update, call.tenant, call.id, caller);
    delivery::Verdict verdict = delivery::settle_verdict(r.row, call.generation);
    if (verdict == delivery::Verdict::kReturnStored) return r.row.status;
    if (verdict != delivery::Verdict::kApply) throw_lease_lost(call.id, call.generation, r.row);

    delivery::Status next = delivery::give_back_status(r.row.attempts, r.row.max_attempts);
    std::int64_t generation = r.row.generation;
    Interval* wait = nullptr;
    if (next == delivery::Status::kPending) {
        generation++;
        wait = delay;
        if (wait == nullptr) {
            std::int64_t usec = delivery::backoff_usec(r.row.attempts);
            wait = pg::guard([usec] {
                Interval* iv = static_cast<Interval*>(palloc0(sizeof(Interval)));
                iv->time = usec;
                return iv;
            });
        }
    }
    Datum values[6] = {UUIDPGetDatum(call.tenant), Int64GetDatum(call.id),
                       pg::text_datum(delivery::status_name(next)), Int64GetDatum(generation),
                       wait ? IntervalPGetDatum(wait) : 0, PointerGetDatum(error)};
    char nulls[7] = "      ";
    if (wait == nullptr) nulls[4] = 'n';
    spi.run(g_retry_apply, values, nulls);
    return next;
}

Datum retry(FunctionCallInfo fcinfo, Oid caller) {
    pg::require_read_write("baton.retry");
    return status_text(retry_delivery(fcinfo, caller));
}

// baton.reap(max_rows): returns expired leases fleet-wide, oldest expiry first, bumping
// the generation; skips tenants that are not active or whose fence is changing. Each
// tenant's rows are reaped by a statement of their own (on Citus, on its node).
Datum reap(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.reap");
    std::int32_t max_rows = pg::int32_arg(fcinfo, 0, "max_rows");
    delivery::check_reap_rows(max_rows);
    pg::Spi spi;
    Datum limit[1] = {Int32GetDatum(max_rows)};
    std::uint64_t n = spi.run(g_reap_tenants, limit, nullptr);
    // Copy the candidates out first: try_writable runs queries of its own.
    pg_uuid_t** candidates = pg::guard([n] { return static_cast<pg_uuid_t**>(palloc(sizeof(pg_uuid_t*) * (n + 1))); });
    for (std::uint64_t i = 0; i < n; i++) {
        bool isnull = false;
        candidates[i] = DatumGetUUIDP(spi.copy_out(i, 1, &isnull));
    }
    std::int32_t reaped = 0;
    for (std::uint64_t i = 0; i < n && reaped < max_rows; i++) {
        if (!pg::fence::try_writable(candidates[i])) continue;
        Datum values[2] = {UUIDPGetDatum(candidates[i]), Int32GetDatum(max_rows - reaped)};
        reaped += static_cast<std::int32_t>(spi.run(g_reap, values, nullptr));
    }
    PG_RETURN_INT32(reaped);
}

// baton.delivery(tenant, id): the delivery's row, for any tenant state; DU008 if absent.
Datum get_delivery(FunctionCallInfo fcinfo, Oid) {
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    std::int64_t id = pg::int64_arg(fcinfo, 1, "id");
    pg::Spi spi;
    Datum values[2] = {UUIDPGetDatum(tenant), Int64GetDatum(id)};
    if (spi.run(g_get, values, nullptr) == 0)
        throw Error(SqlState::kNotFound,
                    "delivery " + std::to_string(id) + " does not exist in tenant " + pg::uuid_text(tenant),
                    "Deliveries are addressed by (tenant, id).");
    bool isnull = false;
    return spi.copy_out(0, 1, &isnull);
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_enqueue, baton::api::enqueue)
BATON_FUNCTION(baton_enqueue_batch, baton::api::enqueue_batch)
BATON_FUNCTION(baton_claim, baton::api::claim)
BATON_FUNCTION(baton_renew, baton::api::renew)
BATON_FUNCTION(baton_finish, baton::api::finish)
BATON_FUNCTION(baton_finish_batch, baton::api::finish_batch)
BATON_FUNCTION(baton_retry, baton::api::retry)
BATON_FUNCTION(baton_reap, baton::api::reap)
BATON_FUNCTION(baton_delivery, baton::api::get_delivery)
