// The statement implementation of the delivery store (see delivery_store.hpp): every
// call through kept SQL statements, run over the store's SPI connection. The WHERE
// clauses select and lock rows (one statement for the common case, an index probe per
// row); what a row owes its caller is then the core's verdict on the row read back.
// Status spellings are the core's (BATON_STATUS_*), spliced in as literals.
#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/event_count.hpp"
#include "pg/runtime/args.hpp"
#include "pg/access/auth.hpp"
#include "pg/citus/citus.hpp"
#include "pg/deliveries/delivery_direct.hpp"
#include "pg/deliveries/delivery_store.hpp"
#include "pg/deliveries/event_counts.hpp"
#include "pg/citus/local_shards.hpp"
#include "pg/runtime/relations.hpp"

namespace baton::pg {

namespace {

// A status as an SQL literal.
#define PENDING "'" BATON_STATUS_PENDING "'"
#define CLAIMED "'" BATON_STATUS_CLAIMED "'"
#define FAILED "'" BATON_STATUS_FAILED "'"
#define CANCELLED "'" BATON_STATUS_CANCELLED "'"

// The role bound to a delivery's target (NULL when unbound), as a subquery of a
// statement over baton.deliveries d: ROLE is what it reads of the binding.
#define ROLE_OF_D(ROLE)                                                             \
    "(SELECT " ROLE " FROM baton.target_bindings b "                                \
    "WHERE b.tenant OPERATOR(pg_catalog.=) d.tenant AND b.target OPERATOR(pg_catalog.=) d.target)"
#define KEY_OF_D "d.tenant OPERATOR(pg_catalog.=) $1 AND d.id OPERATOR(pg_catalog.=) $2"
// What a lease call reads of a row (found_at() below): its state, target, role and lease.
// On one node the role is the binding's oid. On Citus it is the role's name, printed on
// the node of the shard, whose oid for the role is not this node's when the statement
// runs on the coordinator (inside a transaction); found_at() resolves it here.
#define FOUND_COLUMNS_READING(ROLE) \
    "d.status, d.generation, d.attempts, d.max_attempts, d.target, " ROLE_OF_D(ROLE) ", d.lease_until"
#define FOUND_COLUMNS FOUND_COLUMNS_READING("b.role")
#define FOUND_COLUMNS_CITUS FOUND_COLUMNS_READING("b.role::pg_catalog.text")
// FOUND_COLUMNS_CITUS of the row an UPDATE over baton.deliveries d (selecting one row of
// tenant $1) wrote. Citus refuses a RETURNING that calls a function that is not immutable
// (the role's text output is stable), so the row comes out of a CTE and the binding is
// joined outside it, in one statement routed to the tenant's shard.
#define FOUND_OF_UPDATE_CITUS(UPDATE)                                                                   \
    "WITH u AS (" UPDATE " RETURNING d.status, d.generation, d.attempts, d.max_attempts, d.target, "    \
    "d.lease_until) SELECT u.status, u.generation, u.attempts, u.max_attempts, u.target, "              \
    "b.role::pg_catalog.text, u.lease_until FROM u LEFT JOIN baton.target_bindings b "                  \
    "ON b.tenant OPERATOR(pg_catalog.=) $1 AND b.target OPERATOR(pg_catalog.=) u.target"

// A statement that returns the found columns, in its two forms, run through found_plan():
// a SELECT (SELECT_FOUND_PLANS: SQL is a macro of the columns) or an UPDATE
// (UPDATE_FOUND_PLANS: the statement without its RETURNING).
struct FoundPlans {
    pg::KeptPlan single, on_citus;
};
#define SELECT_FOUND_PLANS(SQL, NARGS, ...) \
    {{SQL(FOUND_COLUMNS), NARGS, {__VA_ARGS__}, nullptr}, {SQL(FOUND_COLUMNS_CITUS), NARGS, {__VA_ARGS__}, nullptr}}
#define UPDATE_FOUND_PLANS(UPDATE, NARGS, ...)                              \
    {{UPDATE " RETURNING " FOUND_COLUMNS, NARGS, {__VA_ARGS__}, nullptr}, \
     {FOUND_OF_UPDATE_CITUS(UPDATE), NARGS, {__VA_ARGS__}, nullptr}}

// The form of `plans` for this install (citus::pick()).
pg::KeptPlan& found_plan(FoundPlans& plans) { return citus::pick(plans.single, plans.on_citus); }

pg::KeptPlan g_run_exists = {
    "SELECT 1 FROM baton.runs r WHERE r.tenant OPERATOR(pg_catalog.=) $1 AND r.id OPERATOR(pg_catalog.=) $2",
    2, {UUIDOID, UUIDOID}, nullptr};

pg::KeptPlan g_insert = {
    "INSERT INTO baton.deliveries AS d "
    "(tenant, target, dedup_key, payload, binding, run_after, priority, max_attempts, run_id) "
    "VALUES ($1, $2, $3, $4, $5, COALESCE($6, pg_catalog.now()), $7, $8, $9) "
    "ON CONFLICT (tenant, target, dedup_key) DO NOTHING RETURNING d.id",
    9, {UUIDOID, TEXTOID, TEXTOID, JSONBOID, JSONBOID, TIMESTAMPTZOID, INT4OID, INT4OID, UUIDOID}, nullptr};
// The same with a key ($10), without ON CONFLICT: the row's BEFORE trigger notes a keyed
// delivery for its key's limit (pg/deliveries/key_admission.hpp) before an ON CONFLICT
// check would drop the row, so a key found taken must roll the insert back instead.
pg::KeptPlan g_insert_keyed = {
    "INSERT INTO baton.deliveries AS d "
    "(tenant, target, dedup_key, payload, binding, run_after, priority, max_attempts, run_id, key) "
    "VALUES ($1, $2, $3, $4, $5, COALESCE($6, pg_catalog.now()), $7, $8, $9, $10) RETURNING d.id",
    10, {UUIDOID, TEXTOID, TEXTOID, JSONBOID, JSONBOID, TIMESTAMPTZOID, INT4OID, INT4OID, UUIDOID, TEXTOID}, nullptr};

// enqueue_batch's items in one statement: one array per column ($2..$9, element i of
// each is item i) and their ids ($10, taken from the table's sequence by the caller),
// inserted in item order; RETURNING gives the ids inserted. Without ON CONFLICT
// (g_insert_all_new) for items whose keys were free when looked up: a plain insert
// checks each key as it writes its index entry, where ON CONFLICT first probes the index
// and inserts speculatively, one WAL record more; with it (g_insert_all) once a
// concurrent producer has taken one of those keys.
#define INSERT_ALL_SQL(CONFLICT)                                                                          \
    "INSERT INTO baton.deliveries AS d "                                                                   \
    "(id, tenant, target, dedup_key, payload, binding, run_after, priority, max_attempts, run_id) "        \
    "SELECT i.id, $1, i.target, i.dedup_key, i.payload, i.binding, "                                       \
    "COALESCE(i.run_after, pg_catalog.now()), i.priority, i.max_attempts, i.run_id FROM ROWS FROM ("       \
    "pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4), pg_catalog.unnest($5), "         \
    "pg_catalog.unnest($6), pg_catalog.unnest($7), pg_catalog.unnest($8), pg_catalog.unnest($9), "         \
    "pg_catalog.unnest($10)) "                                                                             \
    "AS i (target, dedup_key, payload, binding, run_after, priority, max_attempts, run_id, id) " CONFLICT   \
    "RETURNING d.id"
#define INSERT_ALL_TYPES                                                                                 \
    UUIDOID, TEXTARRAYOID, TEXTARRAYOID, JSONBARRAYOID, JSONBARRAYOID, TIMESTAMPTZARRAYOID, INT4ARRAYOID, \
        INT4ARRAYOID, UUIDARRAYOID, INT8ARRAYOID
pg::KeptPlan g_insert_all_new = {INSERT_ALL_SQL(""), 10, {INSERT_ALL_TYPES}, nullptr};
pg::KeptPlan g_insert_all = {INSERT_ALL_SQL("ON CONFLICT (tenant, target, dedup_key) DO NOTHING "), 10,
                             {INSERT_ALL_TYPES}, nullptr};

// The items ($2..$5: targets, keys, payloads, bindings) whose keys are taken: the item's
// number (from 1), the id, and whether the row carries the same payload and binding. An
// index probe per item (the LIMIT keeps the subquery from being pulled up into a join).
// Planned for each call (Spi::run_once), with the arrays' lengths and the table's size
// as they are: a plan kept from while the table was small probed the primary key by
// tenant alone, and read the whole tenant for every item once it had grown.
const char* const kTakenSql =
    "SELECT i.n, t.id, t.same "
    "FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4), pg_catalog.unnest($5)) "
    "WITH ORDINALITY AS i (target, dedup_key, payload, binding, n), "
    "LATERAL (SELECT d.id, (d.payload OPERATOR(pg_catalog.=) i.payload) "
    "AND (d.binding OPERATOR(pg_catalog.=) i.binding) AND d.key IS NULL AS same FROM baton.deliveries d "
    "WHERE d.tenant OPERATOR(pg_catalog.=) $1 AND d.target OPERATOR(pg_catalog.=) i.target "
    "AND d.dedup_key OPERATOR(pg_catalog.=) i.dedup_key LIMIT 1) AS t";
const Oid kTakenTypes[5] = {UUIDOID, TEXTARRAYOID, TEXTARRAYOID, JSONBARRAYOID, JSONBARRAYOID};

// The runs among $2 that the tenant has.
pg::KeptPlan g_runs_existing = {
    "SELECT r.id FROM baton.runs r WHERE r.tenant OPERATOR(pg_catalog.=) $1 "
    "AND r.id OPERATOR(pg_catalog.=) ANY ($2)",
    2, {UUIDOID, UUIDARRAYOID}, nullptr};

pg::KeptPlan g_existing = {
    "SELECT d.id, (d.payload OPERATOR(pg_catalog.=) $4) AND (d.binding OPERATOR(pg_catalog.=) $5) AND d.key IS NULL "
    "FROM baton.deliveries d WHERE d.tenant OPERATOR(pg_catalog.=) $1 "
    "AND d.target OPERATOR(pg_catalog.=) $2 AND d.dedup_key OPERATOR(pg_catalog.=) $3",
    5, {UUIDOID, TEXTOID, TEXTOID, JSONBOID, JSONBOID}, nullptr};
// The same for an item with a key ($6): the row holds the same key too (an item without
// one, g_existing, is the same only as a row without one).
pg::KeptPlan g_existing_keyed = {
    "SELECT d.id, (d.payload OPERATOR(pg_catalog.=) $4) AND (d.binding OPERATOR(pg_catalog.=) $5) "
    "AND COALESCE(d.key OPERATOR(pg_catalog.=) $6, false) "
    "FROM baton.deliveries d WHERE d.tenant OPERATOR(pg_catalog.=) $1 "
    "AND d.target OPERATOR(pg_catalog.=) $2 AND d.dedup_key OPERATOR(pg_catalog.=) $3",
    6, {UUIDOID, TEXTOID, TEXTOID, JSONBOID, JSONBOID, TEXTOID}, nullptr};

// The rows to claim are chosen and locked by the ARRAY() subquery, then updated by
// primary key: with a kept (generic) plan the planner cannot know $3, and a join
// against a CTE would be planned for thousands of rows (a hash join over the whole
// table); `id = ANY(ARRAY(...))` is an index probe per claimed row, whatever $3 is.
// The rows come back in key order; emit_claimed() puts them in claim order itself (a
// sort node and a CTE would cost more to start, per call, than sorting max_items rows).
// The last column is the priority, for that order. The SET is delivery::claimed().
// $5 is the clock the claim reads right after its hint (pg/deliveries/claim_hints.hpp): run_after
// is compared with it rather than with the transaction's start. PICK is the subquery:
// the target's rows of baton.ready in claim order, each delivery locked (skipping those
// others hold) and checked pending.
#define CLAIM_SQL(OPEN, CLOSE, PICK)                                                              \
    "UPDATE baton.deliveries d SET status = " CLAIMED ", "                                        \
    "generation = d.generation OPERATOR(pg_catalog.+) 1, "                                        \
    "attempts = d.attempts OPERATOR(pg_catalog.+) 1, "                                            \
    "lease_until = pg_catalog.now() OPERATOR(pg_catalog.+) $4 "                                   \
    "WHERE d.tenant OPERATOR(pg_catalog.=) $1 AND d.id OPERATOR(pg_catalog.=) " OPEN "(" PICK ")" \
    CLOSE " RETURNING d.id, d.generation, d.lease_until, d.dedup_key, d.payload, d.binding, d.attempts, " \
    "d.run_id, d.priority"
#define PICK_READY(FILTER)                                                                       \
    "SELECT c.id FROM baton.ready r JOIN baton.deliveries c ON c.tenant OPERATOR(pg_catalog.=) r.tenant " \
    "AND c.id OPERATOR(pg_catalog.=) r.id "                                                      \
    "WHERE r.tenant OPERATOR(pg_catalog.=) $1 AND r.target OPERATOR(pg_catalog.=) $2 "           \
    "AND r.run_after OPERATOR(pg_catalog.<=) $5 AND c.status OPERATOR(pg_catalog.=) " PENDING " " FILTER##_READY \
    "ORDER BY r.rank, r.id LIMIT $3 FOR UPDATE OF c SKIP LOCKED"
// The filters of a claim's range, on baton.ready r (rank: the priority negated). With
// `expected`: every top-level field of $6 equals the binding's field of that name (the
// delivery's, c).
#define ALL_READY ""
#define EXPECTED_SQL                                                                             \
    "AND NOT EXISTS (SELECT 1 FROM pg_catalog.jsonb_each($6) e WHERE NOT COALESCE("              \
    "((c.binding OPERATOR(pg_catalog.->) e.key) OPERATOR(pg_catalog.=) e.value), false)) "
#define EXPECTED_READY EXPECTED_SQL
// From a claim hint at ($6, $7): the rest of its priority level, then the levels below
// (two index ranges; one row comparison cannot bound an index that mixes DESC and ASC).
#define NEG6 "(OPERATOR(pg_catalog.-) $6::pg_catalog.int8)"
#define LEVEL_READY "AND r.rank OPERATOR(pg_catalog.=) " NEG6 " AND r.id OPERATOR(pg_catalog.>=) $7 "
#define BELOW_READY "AND r.rank OPERATOR(pg_catalog.>) " NEG6 " "

#define CLAIM_TYPES UUIDOID, TEXTOID, INT4OID, INTERVALOID, TIMESTAMPTZOID
// One row: `id = (SELECT ...)`, a primary-key equality, the plan the planner picks even
// before the table's first ANALYZE (it might scan a whole tenant for `id = ANY` then).
// Several rows: `id = ANY (ARRAY(SELECT ...))`, an index probe per row.
struct ClaimPlans {
    pg::KeptPlan all, level, below, expected;
};
#define CLAIM_PLANS(OPEN, CLOSE, PICK)                                                   \
    {{CLAIM_SQL(OPEN, CLOSE, PICK(ALL)), 5, {CLAIM_TYPES}, nullptr},                     \
     {CLAIM_SQL(OPEN, CLOSE, PICK(LEVEL)), 7, {CLAIM_TYPES, INT4OID, INT8OID}, nullptr}, \
     {CLAIM_SQL(OPEN, CLOSE, PICK(BELOW)), 6, {CLAIM_TYPES, INT4OID}, nullptr},          \
     {CLAIM_SQL(OPEN, CLOSE, PICK(EXPECTED)), 6, {CLAIM_TYPES, JSONBOID}, nullptr}}
ClaimPlans g_claim_one = CLAIM_PLANS("", "", PICK_READY);
ClaimPlans g_claim_many = CLAIM_PLANS("ANY (ARRAY", ")", PICK_READY);

// The lease calls name the status 'claimed' as a parameter ($5, $6), so that their generic
// plans probe the primary key. The WHERE selects the row whose lease the caller holds
// (delivery::holds_lease); the row comes back for the core's verdict either way.
FoundPlans g_renew = UPDATE_FOUND_PLANS(
    "UPDATE baton.deliveries d SET lease_until = pg_catalog.now() OPERATOR(pg_catalog.+) $4 "
    "WHERE " KEY_OF_D " AND d.generation OPERATOR(pg_catalog.=) $3 AND d.status OPERATOR(pg_catalog.=) $5",
    5, UUIDOID, INT8OID, INT8OID, INTERVALOID, TEXTOID);

FoundPlans g_finish = UPDATE_FOUND_PLANS(
    "UPDATE baton.deliveries d SET status = $4, result = $5, lease_until = NULL, settled_at = pg_catalog.now() "
    "WHERE " KEY_OF_D " AND d.generation OPERATOR(pg_catalog.=) $3 AND d.status OPERATOR(pg_catalog.=) $6",
    6, UUIDOID, INT8OID, INT8OID, TEXTOID, JSONBOID, TEXTOID);

// finish_batch: every (id, generation) pair of $2/$3 that still holds its row, in one
// statement (an index probe per id).
pg::KeptPlan g_finish_batch = {
    "UPDATE baton.deliveries d SET status = $4, lease_until = NULL, settled_at = pg_catalog.now() "
    "WHERE d.tenant OPERATOR(pg_catalog.=) $1 AND d.id OPERATOR(pg_catalog.=) ANY ($2) "
    "AND d.status OPERATOR(pg_catalog.=) $5 "
    "AND d.generation OPERATOR(pg_catalog.=) ($3)[pg_catalog.array_position($2, d.id)]",
    5, {UUIDOID, INT8ARRAYOID, INT8ARRAYOID, TEXTOID, TEXTOID}, nullptr};

#define BATCH_ROWS_SQL(FOUND)                        \
    "SELECT " FOUND ", d.id FROM baton.deliveries d " \
    "WHERE d.tenant OPERATOR(pg_catalog.=) $1 AND d.id OPERATOR(pg_catalog.=) ANY ($2)"
FoundPlans g_batch_rows = SELECT_FOUND_PLANS(BATCH_ROWS_SQL, 2, UUIDOID, INT8ARRAYOID);

#define ROW_SQL(FOUND) "SELECT " FOUND " FROM baton.deliveries d WHERE " KEY_OF_D

FoundPlans g_row = SELECT_FOUND_PLANS(ROW_SQL, 2, UUIDOID, INT8OID);
pg::KeptPlan g_row_for_update = {ROW_SQL(FOUND_COLUMNS) " FOR UPDATE", 2, {UUIDOID, INT8OID}, nullptr};
// g_row_for_update for Citus, which refuses FOR UPDATE with a subquery: the role column
// NULL, read after by DeliveryStore::bound_role().
pg::KeptPlan g_row_for_update_citus = {
    "SELECT d.status, d.generation, d.attempts, d.max_attempts, d.target, NULL::pg_catalog.text, d.lease_until "
    "FROM baton.deliveries d WHERE " KEY_OF_D " FOR UPDATE",
    2, {UUIDOID, INT8OID}, nullptr};

// retry's write, as delivery::retry_give_back() chose it ($5 NULL: failed, settled).
pg::KeptPlan g_give_back = {
    "UPDATE baton.deliveries d SET status = $3, generation = $4, "
    "run_after = CASE WHEN $5 IS NULL THEN d.run_after "
    "ELSE pg_catalog.now() OPERATOR(pg_catalog.+) $5 END, "
    "lease_until = NULL, last_error = $6, "
    "settled_at = CASE WHEN $5 IS NULL THEN pg_catalog.now() END "
    "WHERE " KEY_OF_D,
    6, {UUIDOID, INT8OID, TEXTOID, INT8OID, INTERVALOID, TEXTOID}, nullptr};

// g_give_back for Citus, one statement per branch of its CASEs, the times computed by
// the caller ($5): Citus crashes on the generic plan of an UPDATE with now() inside
// a CASE, and refuses any function that is not immutable inside a CASE.
pg::KeptPlan g_give_back_pending_citus = {
    "UPDATE baton.deliveries d SET status = $3, generation = $4, run_after = $5, "
    "lease_until = NULL, last_error = $6 WHERE " KEY_OF_D,
    6, {UUIDOID, INT8OID, TEXTOID, INT8OID, TIMESTAMPTZOID, TEXTOID}, nullptr};
pg::KeptPlan g_give_back_settled_citus = {
    "UPDATE baton.deliveries d SET status = $3, generation = $4, settled_at = $5, "
    "lease_until = NULL, last_error = $6 WHERE " KEY_OF_D,
    6, {UUIDOID, INT8OID, TEXTOID, INT8OID, TIMESTAMPTZOID, TEXTOID}, nullptr};

// The tenants among the oldest expired rows of baton.leases (live or stale: reap
// deletes both) expiring at $2 or later, active ones only (a fenced tenant's leases must
// not hide everyone else's), each with its oldest expiry, the tenant with the oldest
// first.
pg::KeptPlan g_reap_tenants = {
    "SELECT e.tenant, pg_catalog.min(e.lease_until) FROM (SELECT l.tenant, l.lease_until FROM baton.leases l "
    "JOIN baton.tenants t ON t.tenant OPERATOR(pg_catalog.=) l.tenant "
    "WHERE t.state OPERATOR(pg_catalog.=) 'active' AND l.lease_until OPERATOR(pg_catalog.<) pg_catalog.now() "
    "AND l.lease_until OPERATOR(pg_catalog.>=) $2 "
    "ORDER BY l.lease_until LIMIT $1) e GROUP BY e.tenant ORDER BY 2 LIMIT 256",
    2, {INT4OID, TIMESTAMPTZOID}, nullptr};

// Returns up to $2 expired leases of one tenant expiring at $4 or later, oldest expiry
// first, skipping rows others hold: the deliveries claimed at the generation of an expired row of
// baton.leases, whose lease (lease_until, renewed or not) has expired. The CASE is
// delivery::give_back_status(), set-wise (docs/internals/architecture.md, the rule copies). $3 is
// now(), the transaction's start: Citus refuses now() inside a CASE of a distributed
// UPDATE.
pg::KeptPlan g_reap = {
    "UPDATE baton.deliveries d SET "
    "status = CASE WHEN d.attempts OPERATOR(pg_catalog.>=) d.max_attempts THEN " FAILED " ELSE " PENDING
    " END, generation = d.generation OPERATOR(pg_catalog.+) 1, lease_until = NULL, "
    "last_error = 'lease expired', "
    "settled_at = CASE WHEN d.attempts OPERATOR(pg_catalog.>=) d.max_attempts THEN $3 END "
    "WHERE d.tenant OPERATOR(pg_catalog.=) $1 AND d.id OPERATOR(pg_catalog.=) ANY (ARRAY("
    "SELECT c.id FROM baton.leases l JOIN baton.deliveries c ON c.tenant OPERATOR(pg_catalog.=) l.tenant "
    "AND c.id OPERATOR(pg_catalog.=) l.id AND c.generation OPERATOR(pg_catalog.=) l.generation "
    "WHERE l.tenant OPERATOR(pg_catalog.=) $1 AND l.lease_until OPERATOR(pg_catalog.<) $3 "
    "AND l.lease_until OPERATOR(pg_catalog.>=) $4 "
    "AND c.status OPERATOR(pg_catalog.=) " CLAIMED " AND c.lease_until OPERATOR(pg_catalog.<) $3 "
    "ORDER BY l.lease_until LIMIT $2 FOR UPDATE OF c SKIP LOCKED))",
    4, {UUIDOID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID}, nullptr};

// After g_reap, in the same transaction: deletes up to $2 expired rows of baton.leases
// of one tenant, expiring at $4 or later, whose delivery no longer holds that lease (left by a write that passed
// no trigger), oldest first, skipping rows another reaper holds. A row
// whose delivery still holds it, expired (g_reap skipped the delivery, held by its
// worker), stays for the next reap.
pg::KeptPlan g_sweep = {
    "DELETE FROM baton.leases l WHERE l.tenant OPERATOR(pg_catalog.=) $1 AND l.ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
    "SELECT x.ctid FROM baton.leases x WHERE x.tenant OPERATOR(pg_catalog.=) $1 "
    "AND x.lease_until OPERATOR(pg_catalog.<) $3 AND x.lease_until OPERATOR(pg_catalog.>=) $4 AND NOT EXISTS (SELECT 1 FROM baton.deliveries c "
    "WHERE c.tenant OPERATOR(pg_catalog.=) x.tenant AND c.id OPERATOR(pg_catalog.=) x.id "
    "AND c.generation OPERATOR(pg_catalog.=) x.generation AND c.status OPERATOR(pg_catalog.=) " CLAIMED " "
    "AND c.lease_until OPERATOR(pg_catalog.=) x.lease_until) "
    "ORDER BY x.lease_until LIMIT $2 FOR UPDATE SKIP LOCKED))",
    4, {UUIDOID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID}, nullptr};

// cancel_delivery's write, as delivery::cancelled() chose it: generation $3 fences the
// holder; a NULL reason keeps last_error.
pg::KeptPlan g_cancel = {
    "UPDATE baton.deliveries d SET status = " CANCELLED ", generation = $3, lease_until = NULL, "
    "settled_at = pg_catalog.now(), last_error = COALESCE($4, d.last_error) WHERE " KEY_OF_D
    " AND d.generation OPERATOR(pg_catalog.=) ($3 OPERATOR(pg_catalog.-) 1)",
    4, {UUIDOID, INT8OID, INT8OID, TEXTOID}, nullptr};

// redrive's write, delivery::redriven() set-wise (the rows delivery::redrivable() admits:
// failed and cancelled; the outer WHERE repeats the status so that a row changed since
// the subquery locked it is rechecked). Oldest settled first, rows others lock skipped:
// no index orders settled rows (one on settled_at would keep finishes from being HOT
// updates), so the oldest are sorted out of the target's rows, read from the tenant's
// range of an index (the dedup key's leads with the key, not the target: docs/internals/choices.md,
// "The dedup key's index").
#define REDRIVE_SET                                                                               \
    "UPDATE baton.deliveries d SET status = " PENDING ", attempts = 0, "                          \
    "run_after = pg_catalog.now(), lease_until = NULL, settled_at = NULL "                        \
    "WHERE d.tenant OPERATOR(pg_catalog.=) $1 "                                                   \
    "AND d.status OPERATOR(pg_catalog.=) ANY (ARRAY[" FAILED ", " CANCELLED "]::pg_catalog.text[]) " \
    "AND d.id OPERATOR(pg_catalog.=) ANY (ARRAY("                                                 \
    "SELECT c.id FROM baton.deliveries c WHERE c.tenant OPERATOR(pg_catalog.=) $1 "               \
    "AND c.target OPERATOR(pg_catalog.=) $2 "                                                     \
    "AND c.status OPERATOR(pg_catalog.=) ANY (ARRAY[" FAILED ", " CANCELLED "]::pg_catalog.text[]) "
pg::KeptPlan g_redrive_oldest = {
    REDRIVE_SET "ORDER BY c.settled_at, c.id LIMIT $3 FOR UPDATE SKIP LOCKED))",
    3, {UUIDOID, TEXTOID, INT4OID}, nullptr};
pg::KeptPlan g_redrive_ids = {
    REDRIVE_SET "AND c.id OPERATOR(pg_catalog.=) ANY ($3) ORDER BY c.id FOR UPDATE SKIP LOCKED)) RETURNING d.id",
    3, {UUIDOID, TEXTOID, INT8ARRAYOID}, nullptr};

// The target and status of the deliveries $2 of tenant $1 (those redrive skipped).
pg::KeptPlan g_redrive_skipped = {
    "SELECT d.id, d.target, d.status FROM baton.deliveries d WHERE d.tenant OPERATOR(pg_catalog.=) $1 "
    "AND d.id OPERATOR(pg_catalog.=) ANY ($2)",
    2, {UUIDOID, INT8ARRAYOID}, nullptr};

pg::KeptPlan g_get = {"SELECT d FROM baton.deliveries d WHERE " KEY_OF_D, 2, {UUIDOID, INT8OID}, nullptr};

// A status as a text datum, for a statement's parameter.
Datum status_datum(delivery::Status s) { return text_datum(delivery::status_name(s)); }

// Reads a stored status through the core; a spelling it does not know is a broken row.
delivery::Row stored_row(std::int64_t id, const char* status, std::int64_t generation, std::int32_t attempts,
                         std::int32_t max_attempts) {
    std::optional<delivery::Status> s = delivery::parse_status(status);
    if (!s) throw Error(SqlState::kInternal, "delivery " + std::to_string(id) + " has an unknown status");
    return {*s, generation, attempts, max_attempts};
}

// Row `row` of the last result, read as FOUND_COLUMNS or FOUND_COLUMNS_CITUS from column
// 1 (`id` names it): the role by its type, an oid or a name to resolve on this node.
FoundDelivery found_at(const Spi& spi, std::uint64_t row, std::int64_t id) {
    bool isnull = false;
    Datum lease_until = spi.value(row, 7, &isnull);
    Oid role = spi.column_type(6) == TEXTOID ? auth::role_named(spi.cstring_at(row, 6)) : spi.oid_at(row, 6);
    return {true,
            stored_row(id, spi.cstring_at(row, 1), spi.int64_at(row, 2), spi.int32_at(row, 3), spi.int32_at(row, 4)),
            spi.cstring_at(row, 5), role, isnull ? 0 : DatumGetTimestampTz(lease_until)};
}

// The row (tenant, id) read by `plan` (g_row's form, g_row_for_update or its Citus form);
// found false when absent.
FoundDelivery read_found(Spi& spi, KeptPlan& plan, pg_uuid_t* tenant, std::int64_t id) {
    Datum values[2] = {UUIDPGetDatum(tenant), Int64GetDatum(id)};
    if (spi.run(plan, values, nullptr) == 0) return FoundDelivery{false, {}, nullptr, InvalidOid, 0};
    return found_at(spi, 0, id);
}

// The rows one claim statement returned, in claim order (priority descending, then
// enqueue order), into the result.
Claimed emit_claimed(Spi& spi, std::uint64_t n, const ClaimCall& call) {
    if (n == 0) return {0, claim_hint::kEnd};
    std::vector<std::uint64_t> order(n);
    for (std::uint64_t row = 0; row < n; row++) order[row] = row;
    std::sort(order.begin(), order.end(), [&spi](std::uint64_t a, std::uint64_t b) {
        std::int32_t pa = spi.int32_at(a, 9), pb = spi.int32_at(b, 9);
        return pa != pb ? pa > pb : spi.int64_at(a, 1) < spi.int64_at(b, 1);
    });
    for (std::uint64_t row : order) {
        Datum values[kClaimColumns];
        bool nulls[kClaimColumns];
        for (int col = 0; col < kClaimColumns; col++) values[col] = spi.value(row, col + 1, &nulls[col]);
        put_claimed(call, values, nulls);
    }
    std::uint64_t last = order.back();
    return {static_cast<std::int64_t>(n), {spi.int32_at(last, 9), spi.int64_at(last, 1)}};
}

}  // namespace

// One SELECT of the run's primary key.
bool DeliveryStore::run_exists(pg_uuid_t* tenant, pg_uuid_t* run_id) {
    Datum values[2] = {UUIDPGetDatum(tenant), UUIDPGetDatum(run_id)};
    return spi().run(g_run_exists, values, nullptr, 1) > 0;
}

// One SELECT of the tenant's runs among the items' run ids.
int DeliveryStore::first_missing_run(pg_uuid_t* tenant, const NewDelivery* items, int n) {
    int with_run = 0;
    for (int i = 0; i < n; i++)
        if (items[i].run_id != nullptr) with_run++;
    if (with_run == 0) return n;
    Datum* runs = guard([with_run] { return static_cast<Datum*>(palloc(sizeof(Datum) * with_run)); });
    for (int i = 0, k = 0; i < n; i++)
        if (items[i].run_id != nullptr) runs[k++] = UUIDPGetDatum(items[i].run_id);
    Datum values[2] = {UUIDPGetDatum(tenant), guard([runs, with_run] {
                           return PointerGetDatum(construct_array(runs, with_run, UUIDOID, UUID_LEN, false,
                                                                  TYPALIGN_CHAR));
                       })};
    Spi& s = spi();
    std::uint64_t found = s.run(g_runs_existing, values, nullptr);
    std::vector<pg_uuid_t> known(found);
    for (std::uint64_t row = 0; row < found; row++) {
        bool isnull = false;
        known[row] = *DatumGetUUIDP(s.value(row, 1, &isnull));
    }
    auto before = [](const pg_uuid_t& a, const pg_uuid_t& b) { return std::memcmp(a.data, b.data, UUID_LEN) < 0; };
    std::sort(known.begin(), known.end(), before);
    for (int i = 0; i < n; i++)
        if (items[i].run_id != nullptr && !std::binary_search(known.begin(), known.end(), *items[i].run_id, before))
            return i;
    return n;
}

namespace {

// The items' column `get` as an array of `type` (NULL elements where `present` says so).
template <typename Get, typename Present>
Datum column_array(const NewDelivery* items, int n, Oid type, Get get, Present present) {
    Datum* values = guard([n] { return static_cast<Datum*>(palloc(sizeof(Datum) * (n + 1))); });
    bool* nulls = guard([n] { return static_cast<bool*>(palloc(sizeof(bool) * (n + 1))); });
    for (int i = 0; i < n; i++) {
        nulls[i] = !present(items[i]);
        values[i] = nulls[i] ? static_cast<Datum>(0) : get(items[i]);
    }
    return guard([values, nulls, n, type] {
        int16 len;
        bool byval;
        char align;
        get_typlenbyvalalign(type, &len, &byval, &align);
        int dims[1] = {n};
        int lbs[1] = {1};
        return PointerGetDatum(construct_md_array(values, nulls, 1, dims, lbs, type, len, byval, align));
    });
}

// The columns of the items that name and compare a key, as arrays: target, dedup_key,
// payload and binding, into out[0..3].
void key_arrays(const NewDelivery* items, int n, Datum* out) {
    auto always = [](const NewDelivery&) { return true; };
    out[0] = column_array(items, n, TEXTOID, [](const NewDelivery& d) { return PointerGetDatum(d.target); }, always);
    out[1] = column_array(items, n, TEXTOID, [](const NewDelivery& d) { return PointerGetDatum(d.dedup_key); }, always);
    out[2] = column_array(items, n, JSONBOID, [](const NewDelivery& d) { return JsonbPGetDatum(d.payload); }, always);
    out[3] = column_array(items, n, JSONBOID, [](const NewDelivery& d) { return JsonbPGetDatum(d.binding); }, always);
}

}  // namespace

// One SELECT over the items' keys (kTakenSql).
void DeliveryStore::taken(pg_uuid_t* tenant, const NewDelivery* items, int n, Added* out) {
    for (int i = 0; i < n; i++) out[i] = {Added::kNeither, 0, false};
    if (n == 0) return;
    Datum values[5] = {UUIDPGetDatum(tenant), 0, 0, 0, 0};
    key_arrays(items, n, values + 1);
    Spi& s = spi();
    std::uint64_t rows = s.run_once(kTakenSql, 5, kTakenTypes, values);
    for (std::uint64_t row = 0; row < rows; row++) {
        std::int64_t i = s.int64_at(row, 1) - 1;
        if (i >= 0 && i < n) out[i] = {Added::kExisting, s.int64_at(row, 2), s.bool_at(row, 3)};
    }
}

// nextval of the sequence of the table's id column, as the column's default takes them.
void DeliveryStore::take_ids(int n, std::int64_t* ids) {
    guard([n, ids] {
        Oid table = relations::relid("deliveries");
        Oid sequence = compat::identity_sequence(table, get_attnum(table, "id"));
        for (int i = 0; i < n; i++) ids[i] = nextval_internal(sequence, false);
    });
}

// The items to insert, in a subtransaction: directly (delivery_direct::insert()) when
// the table allows it, else by the plain statement. A unique violation (a key taken since
// it was looked up, or never looked up) rolls it back; then, when the caller asks and the
// install allows, they go again by the statement with ON CONFLICT DO NOTHING and the same
// ids.
bool DeliveryStore::add_all(pg_uuid_t* tenant, const NewDelivery* items, int n, const bool* insert,
                            std::int64_t* ids, bool around_taken) {
    if (n == 0) return true;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (insert[i]) m++;
    if (m == 0) {
        for (int i = 0; i < n; i++) ids[i] = 0;
        return true;
    }
    NewDelivery* chosen = guard([m] { return static_cast<NewDelivery*>(palloc(sizeof(NewDelivery) * (m + 1))); });
    std::int64_t* chosen_ids =
        guard([m] { return static_cast<std::int64_t*>(palloc(sizeof(std::int64_t) * (m + 1))); });
    for (int i = 0, k = 0; i < n; i++)
        if (insert[i]) {
            chosen[k] = items[i];
            chosen_ids[k++] = ids[i];
        }
    // On Citus the insert is always Citus' statement, even in a call served from the
    // tenant's shards (pg/citus/local_group.hpp): when it meets a key taken meanwhile, the
    // statement that follows (INSERT ... SELECT ... ON CONFLICT) is Citus' too, and Citus
    // runs such a statement in this backend only after its own statements did in the
    // transaction; otherwise over a connection of its own, which a direct attempt before
    // it would leave without the transaction's state.
    delivery_direct::Table* table = citus::distributed() ? nullptr : direct(delivery_direct::Use::kInsert, tenant);
    bool plain_first = true;
    if (table != nullptr && delivery_direct::can_insert(table, chosen, m)) {
        ErrorData* e = attempt([table, tenant, chosen, m, chosen_ids] {
            delivery_direct::insert(table, tenant, chosen, m, chosen_ids);
        });
        if (e != nullptr) delivery_direct::insert_failed(table);
        if (e != nullptr && e->sqlerrcode != ERRCODE_UNIQUE_VIOLATION) throw PgError(e);
        if (e == nullptr) {
            for (int i = 0; i < n; i++)
                if (!insert[i]) ids[i] = 0;
            return true;
        }
        if (!around_taken) return false;
        plain_first = false;
    }
    return add_all_by_statement(tenant, chosen, m, chosen_ids, insert, n, ids, around_taken, plain_first);
}

// The statement of add_all(): the plain insert first (plain_first), else or after a unique
// violation the one with ON CONFLICT DO NOTHING; RETURNING tells which items went in.
bool DeliveryStore::add_all_by_statement(pg_uuid_t* tenant, const NewDelivery* chosen, int m,
                                         const std::int64_t* chosen_ids, const bool* insert, int n,
                                         std::int64_t* ids, bool around_taken, bool plain_first) {
    auto always = [](const NewDelivery&) { return true; };
    Datum values[10] = {
        UUIDPGetDatum(tenant), 0, 0, 0, 0,
        column_array(chosen, m, TIMESTAMPTZOID, [](const NewDelivery& d) { return TimestampTzGetDatum(d.run_after); },
                     [](const NewDelivery& d) { return d.has_run_after; }),
        column_array(chosen, m, INT4OID, [](const NewDelivery& d) { return Int32GetDatum(d.priority); }, always),
        column_array(chosen, m, INT4OID, [](const NewDelivery& d) { return Int32GetDatum(d.max_attempts); }, always),
        column_array(chosen, m, UUIDOID, [](const NewDelivery& d) { return UUIDPGetDatum(d.run_id); },
                     [](const NewDelivery& d) { return d.run_id != nullptr; }),
        guard([chosen_ids, m] {
            Datum* id_values = static_cast<Datum*>(palloc(sizeof(Datum) * (m + 1)));
            for (int k = 0; k < m; k++) id_values[k] = Int64GetDatum(chosen_ids[k]);
            return PointerGetDatum(construct_array(id_values, m, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
                                                   TYPALIGN_DOUBLE));
        })};
    key_arrays(chosen, m, values + 1);
    Spi& s = spi();
    ErrorData* e = nullptr;
    if (plain_first) {
        SPIPlanPtr plain = g_insert_all_new.get();
        e = attempt([plain, &values] {
            if (SPI_execute_plan(plain, values, nullptr, false, 0) != SPI_OK_INSERT_RETURNING)
                elog(ERROR, "pg_baton could not insert a batch of deliveries");
        });
        if (e != nullptr && e->sqlerrcode != ERRCODE_UNIQUE_VIOLATION) throw PgError(e);
        if (e != nullptr && (!around_taken || citus::distributed())) return false;
    }
    bool speculative = !plain_first || e != nullptr;
    std::uint64_t rows = 0;
    if (!speculative) {
        rows = SPI_processed;
    } else {
        event_counts::Scope counted_below(event_counts::set_inserting_speculatively);
        rows = s.run(g_insert_all, values, nullptr);
    }
    // The rows come back in item order: an item whose id is not the next one was not inserted.
    std::uint64_t row = 0;
    for (int i = 0, k = 0; i < n; i++) {
        bool inserted = insert[i] && row < rows && s.int64_at(row, 1) == ids[i];
        if (inserted) row++;
        if (inserted && speculative) guard([tenant, chosen, k] { event_counts::enqueued(tenant, chosen[k].target, 1); });
        if (insert[i]) k++;
        if (!inserted) ids[i] = 0;
    }
    if (row != rows) throw Error(SqlState::kInternal, "enqueue_batch could not match the deliveries it inserted");
    return true;
}

// INSERT ... ON CONFLICT DO NOTHING, then, when the key is taken, the row that holds it.
// An item with a key: the row that holds its dedup key first, else a plain INSERT in a
// subtransaction, rolled back (with what its trigger noted) when a concurrent producer
// took the dedup key meanwhile.
Added DeliveryStore::add(pg_uuid_t* tenant, const NewDelivery& d) {
    Datum values[10] = {UUIDPGetDatum(tenant),       PointerGetDatum(d.target),   PointerGetDatum(d.dedup_key),
                        JsonbPGetDatum(d.payload),   JsonbPGetDatum(d.binding),   TimestampTzGetDatum(d.run_after),
                        Int32GetDatum(d.priority),   Int32GetDatum(d.max_attempts), UUIDPGetDatum(d.run_id),
                        PointerGetDatum(d.key)};
    char nulls[11] = "          ";
    if (!d.has_run_after) nulls[5] = 'n';
    if (d.run_id == nullptr) nulls[8] = 'n';
    if (d.key == nullptr) {
        std::uint64_t inserted = 0;
        {
            event_counts::Scope speculative(event_counts::set_inserting_speculatively);
            inserted = spi().run(g_insert, values, nulls);
        }
        if (inserted == 1) {
            guard([tenant, &d] { event_counts::enqueued(tenant, d.target, 1); });
            return {Added::kInserted, spi().int64_at(0, 1), true};
        }
        return existing(tenant, d);
    }
    Added found = existing(tenant, d);
    if (found.outcome == Added::kExisting) return found;
    spi();
    SPIPlanPtr plan = g_insert_keyed.get();
    std::int64_t id = 0;
    ErrorData* e = attempt([plan, &values, &nulls, &id] {
        if (SPI_execute_plan(plan, values, nulls, false, 0) != SPI_OK_INSERT_RETURNING || SPI_processed != 1)
            elog(ERROR, "pg_baton could not insert a delivery");
        bool isnull = false;
        id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
    });
    if (e == nullptr) return {Added::kInserted, id, true};
    if (e->sqlerrcode != ERRCODE_UNIQUE_VIOLATION) throw PgError(e);
    return existing(tenant, d);
}

// One SELECT by the dedup key.
Added DeliveryStore::existing(pg_uuid_t* tenant, const NewDelivery& d) {
    Datum values[6] = {UUIDPGetDatum(tenant),     PointerGetDatum(d.target),  PointerGetDatum(d.dedup_key),
                       JsonbPGetDatum(d.payload), JsonbPGetDatum(d.binding), PointerGetDatum(d.key)};
    Spi& s = spi();
    if (s.run(d.key != nullptr ? g_existing_keyed : g_existing, values, nullptr) == 1)
        return {Added::kExisting, s.int64_at(0, 1), s.bool_at(0, 2)};
    return {Added::kNeither, 0, false};
}

// The first tenant, after $2 in order of id (or from the first, without $2), with a
// pending delivery of target $1: the fair claim's next turn. ready_pkey leads with
// (target, tenant), so this is one descent to the first entry past (target, $2), not a
// read of the rows not yet due, which the tenant's claim passes with its claim hint.
KeptPlan g_tenant_with_pending_after = {
    "SELECT r.tenant FROM baton.ready r WHERE r.target OPERATOR(pg_catalog.=) $1 "
    "AND r.tenant OPERATOR(pg_catalog.>) $2 ORDER BY r.target, r.tenant LIMIT 1",
    2, {TEXTOID, UUIDOID}, nullptr};
KeptPlan g_tenant_with_pending_first = {
    "SELECT r.tenant FROM baton.ready r WHERE r.target OPERATOR(pg_catalog.=) $1 ORDER BY r.target, r.tenant LIMIT 1",
    1, {TEXTOID}, nullptr};

bool DeliveryStore::tenant_with_pending(text* target, const pg_uuid_t* after, pg_uuid_t* tenant) {
    Spi& s = spi();
    Datum values[2] = {PointerGetDatum(target), UUIDPGetDatum(const_cast<pg_uuid_t*>(after))};
    std::uint64_t n = s.run(after != nullptr ? g_tenant_with_pending_after : g_tenant_with_pending_first, values,
                            nullptr, 1);
    if (n == 0) return false;
    bool isnull = false;
    *tenant = *DatumGetUUIDP(s.value(0, 1, &isnull));
    return true;
}

// One claim statement for the range (the filtered one with `expected`).
Claimed DeliveryStore::claim_by_statement(const ClaimCall& call, ClaimRange range, claim_hint::Position from,
                                          std::int64_t n) {
    ClaimPlans& plans = n == 1 ? g_claim_one : g_claim_many;
    Datum values[7] = {UUIDPGetDatum(call.tenant), PointerGetDatum(call.target),
                       Int32GetDatum(static_cast<std::int32_t>(n)), IntervalPGetDatum(call.lease),
                       TimestampTzGetDatum(call.now), 0, 0};
    KeptPlan* plan = &plans.all;
    if (call.expected != nullptr) {
        values[5] = JsonbPGetDatum(call.expected);
        plan = &plans.expected;
    } else if (range != ClaimRange::kAll) {
        values[5] = Int32GetDatum(static_cast<std::int32_t>(from.priority));
        values[6] = Int64GetDatum(from.id);
        plan = range == ClaimRange::kLevel ? &plans.level : &plans.below;
    }
    Spi& s = spi();
    return emit_claimed(s, s.run(*plan, values, nullptr), call);
}

// The fenced UPDATE; when it matches nothing, the row as it is.
FoundDelivery DeliveryStore::renew(pg_uuid_t* tenant, std::int64_t id, std::int64_t generation, Interval* lease) {
    Datum values[5] = {UUIDPGetDatum(tenant), Int64GetDatum(id), Int64GetDatum(generation), IntervalPGetDatum(lease),
                       status_datum(delivery::Status::kClaimed)};
    if (spi().run(found_plan(g_renew), values, nullptr) == 1) return found_at(spi(), 0, id);
    return read_found(spi(), found_plan(g_row), tenant, id);
}

// The fenced UPDATE; when it matches nothing, the row as it is.
FoundDelivery DeliveryStore::settle_by_statement(pg_uuid_t* tenant, std::int64_t id, std::int64_t generation,
                                                 delivery::Status outcome, Jsonb* result) {
    Datum values[6] = {UUIDPGetDatum(tenant), Int64GetDatum(id), Int64GetDatum(generation), status_datum(outcome),
                       result ? JsonbPGetDatum(result) : 0, status_datum(delivery::Status::kClaimed)};
    char nulls[7] = "      ";
    if (result == nullptr) nulls[4] = 'n';
    if (spi().run(found_plan(g_finish), values, nulls) == 1) return found_at(spi(), 0, id);
    return read_found(spi(), found_plan(g_row), tenant, id);
}

// One UPDATE for every pair that holds its row, then every pair's row as it now is.
void DeliveryStore::settle_batch_by_statement(pg_uuid_t* tenant, const Int64Array& ids, const Int64Array& generations,
                                              delivery::Status outcome, FoundDelivery* out) {
    Datum values[5] = {UUIDPGetDatum(tenant), ids.array, generations.array, status_datum(outcome),
                       status_datum(delivery::Status::kClaimed)};
    Spi& s = spi();
    s.run(g_finish_batch, values, nullptr);
    std::unordered_map<std::int64_t, int> position;
    for (int i = 0; i < ids.n; i++) {
        position[DatumGetInt64(ids.values[i])] = i;
        out[i] = FoundDelivery{false, {}, nullptr, InvalidOid, 0};
    }
    std::uint64_t n = s.run(found_plan(g_batch_rows), values, nullptr);
    for (std::uint64_t row = 0; row < n; row++) {
        std::int64_t id = s.int64_at(row, 8);
        out[position[id]] = found_at(s, row, id);
    }
}

// The row FOR UPDATE: retry decides on it and writes it in the same transaction.
FoundDelivery DeliveryStore::lock(pg_uuid_t* tenant, std::int64_t id) {
    if (!citus::distributed()) return read_found(spi(), g_row_for_update, tenant, id);
    FoundDelivery f = read_found(spi(), g_row_for_update_citus, tenant, id);
    if (f.found) f.role = binding(tenant, f.target, static_cast<int>(std::strlen(f.target))).role;
    return f;
}

// Writes the give-back; a pending row waits `delay`, or the core's backoff without one.
void DeliveryStore::give_back(pg_uuid_t* tenant, std::int64_t id, const delivery::GiveBack& to, Interval* delay,
                              text* error) {
    Interval* wait = nullptr;
    if (!to.settles) {
        wait = delay;
        std::int64_t usec = to.backoff_usec;
        if (wait == nullptr)
            wait = guard([usec] {
                Interval* iv = static_cast<Interval*>(palloc0(sizeof(Interval)));
                iv->time = usec;
                return iv;
            });
    }
    Datum values[6] = {UUIDPGetDatum(tenant), Int64GetDatum(id), status_datum(to.status),
                       Int64GetDatum(to.generation), wait ? IntervalPGetDatum(wait) : 0, PointerGetDatum(error)};
    char nulls[7] = "      ";
    if (wait == nullptr) nulls[4] = 'n';
    if (!citus::distributed()) {
        spi().run(g_give_back, values, nulls);
        return;
    }
    // On Citus: now() (the transaction's start), or now() + the wait, as a parameter.
    values[4] = guard([wait] {
        Datum now = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
        return wait ? DirectFunctionCall2(timestamptz_pl_interval, now, IntervalPGetDatum(wait)) : now;
    });
    nulls[4] = ' ';
    spi().run(wait ? g_give_back_pending_citus : g_give_back_settled_citus, values, nulls);
}

// The candidates copied out first: the caller's fence checks run queries of their own.
// On a worker of a distributed install only its own shards' (each node's reaper reaps
// its own tenants; a worker has Citus' metadata, and the distributed tables would give
// it the whole cluster's); elsewhere, on the coordinator too, the distributed tables'.
DeliveryStore::ReapTenant* DeliveryStore::reap_tenants(std::int32_t max_rows, TimestampTz from, std::uint64_t* n) {
    Datum values[2] = {Int32GetDatum(max_rows), TimestampTzGetDatum(from)};
    Spi& s = spi();
    std::uint64_t count = 0;
    if (!local_shards::run_on_own_shards(s, g_reap_tenants, values, {"leases", "tenants"}, &count))
        count = s.run(g_reap_tenants, values, nullptr);
    auto* tenants = guard([count] { return static_cast<ReapTenant*>(palloc(sizeof(ReapTenant) * (count + 1))); });
    for (std::uint64_t i = 0; i < count; i++) {
        bool isnull = false;
        tenants[i].tenant = DatumGetUUIDP(s.copy_out(i, 1, &isnull));
        tenants[i].oldest = DatumGetTimestampTz(s.value(i, 2, &isnull));
    }
    *n = count;
    return tenants;
}

// One UPDATE over the tenant's oldest expired leases (their rows of baton.leases go with
// it, through the fence trigger), then one DELETE of up to max_rows expired rows that no
// delivery holds: only those a write that passed no trigger left behind, since every
// write that ends a lease removes its row. Both read the leases from the tenant's oldest
// that reap_tenants() found.
std::int32_t DeliveryStore::reap(const ReapTenant& tenant, std::int32_t max_rows) {
    Datum values[4] = {UUIDPGetDatum(tenant.tenant), Int32GetDatum(max_rows),
                       TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()), TimestampTzGetDatum(tenant.oldest)};
    // The leases the statement gives back count as reaped (event_counts), not retried.
    event_counts::Scope reaping(event_counts::set_reaping);
    std::int32_t reaped = static_cast<std::int32_t>(spi().run(g_reap, values, nullptr));
    spi().run(g_sweep, values, nullptr);
    return reaped;
}

// One UPDATE of the row lock() has locked, and only while it still has the generation
// lock() read (generation - 1): a row lock does not follow a shard that Citus moves
// while the call runs, so the write checks what it decided on. False when it has not.
bool DeliveryStore::cancel(pg_uuid_t* tenant, std::int64_t id, std::int64_t generation, text* reason) {
    Datum values[4] = {UUIDPGetDatum(tenant), Int64GetDatum(id), Int64GetDatum(generation), PointerGetDatum(reason)};
    char nulls[5] = "    ";
    if (reason == nullptr) nulls[3] = 'n';
    return spi().run(g_cancel, values, nulls) == 1;
}

// One UPDATE: the oldest settled rows of the target, or those of `ids`.
std::int64_t DeliveryStore::redrive(pg_uuid_t* tenant, text* target, const Int64Array* ids, std::int32_t max_rows,
                                    std::vector<std::int64_t>* skipped) {
    Datum values[3] = {UUIDPGetDatum(tenant), PointerGetDatum(target),
                       ids != nullptr ? ids->array : Int32GetDatum(max_rows)};
    std::uint64_t n = spi().run(ids != nullptr ? g_redrive_ids : g_redrive_oldest, values, nullptr);
    if (ids != nullptr && skipped != nullptr) {
        std::unordered_set<std::int64_t> moved;
        for (std::uint64_t i = 0; i < n; i++) moved.insert(spi().int64_at(i, 1));
        for (int i = 0; i < ids->n; i++) {
            std::int64_t id = DatumGetInt64(ids->values[i]);
            if (moved.count(id) == 0) skipped->push_back(id);
        }
    }
    return static_cast<std::int64_t>(n);
}

std::vector<DeliveryStore::Skipped> DeliveryStore::describe_skipped(pg_uuid_t* tenant,
                                                                    const std::vector<std::int64_t>& ids) {
    Datum array = guard([&ids] {
        Datum* elems = static_cast<Datum*>(palloc(sizeof(Datum) * ids.size()));
        for (std::size_t i = 0; i < ids.size(); i++) elems[i] = Int64GetDatum(ids[i]);
        return PointerGetDatum(construct_array(elems, static_cast<int>(ids.size()), INT8OID, sizeof(int64),
                                               FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
    });
    Datum values[2] = {UUIDPGetDatum(tenant), array};
    std::uint64_t n = spi().run(g_redrive_skipped, values, nullptr);
    std::unordered_map<std::int64_t, std::uint64_t> found;
    for (std::uint64_t i = 0; i < n; i++) found.emplace(spi().int64_at(i, 1), i);
    std::vector<Skipped> out;
    out.reserve(ids.size());
    for (std::int64_t id : ids) {
        auto it = found.find(id);
        if (it == found.end())
            out.push_back({id, false, {}, {}});
        else
            out.push_back({id, true, spi().cstring_at(it->second, 2), spi().cstring_at(it->second, 3)});
    }
    return out;
}

// The composite row, copied out of SPI's memory.
std::optional<Datum> DeliveryStore::row(pg_uuid_t* tenant, std::int64_t id) {
    Datum values[2] = {UUIDPGetDatum(tenant), Int64GetDatum(id)};
    if (spi().run(g_get, values, nullptr) == 0) return std::nullopt;
    bool isnull = false;
    return spi().copy_out(0, 1, &isnull);
}

}  // namespace baton::pg
