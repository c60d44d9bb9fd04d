// The statements of baton.stages (see stage_store.hpp).
#include <string>
#include <vector>

#include "core/cause.hpp"
#include "core/chain.hpp"
#include "core/definition.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/run.hpp"
#include "core/sqlstate.hpp"
#include "pg/runtime/args.hpp"
#include "pg/citus/citus.hpp"
#include "pg/stores/stage_store.hpp"

namespace baton::pg::stages {

namespace {

#define KEY_OF_R BATON_KEY_OF_R

// The columns read_stage reads, BEFORE_DEADLINE being `retry_at > now()` or, for a
// RETURNING list (no now() there, so that the statement stays distributable), a constant.
#define STAGE_COLUMNS_WITH(BEFORE_DEADLINE)                                         \
    "s.id, s.stage, s.entry_seq, s.status, s.attempt, s.max_attempts, s.retry_at, " \
    BEFORE_DEADLINE ", s.inputs, s.is_current, s.result"
#define STAGE_COLUMNS STAGE_COLUMNS_WITH("s.retry_at OPERATOR(pg_catalog.>) pg_catalog.now()")

KeptPlan g_find = {
    "SELECT " STAGE_COLUMNS " FROM baton.stages s WHERE s.tenant OPERATOR(pg_catalog.=) $1 "
    "AND s.run_id OPERATOR(pg_catalog.=) $2 AND s.id OPERATOR(pg_catalog.=) $3",
    3, {UUIDOID, UUIDOID, INT8OID}, nullptr};

KeptPlan g_is_of_run = {
    "SELECT 1 FROM baton.stages s WHERE s.tenant OPERATOR(pg_catalog.=) $1 "
    "AND s.id OPERATOR(pg_catalog.=) $3 AND s.run_id OPERATOR(pg_catalog.=) $2",
    3, {UUIDOID, UUIDOID, INT8OID}, nullptr};

KeptPlan g_current = {
    "SELECT " STAGE_COLUMNS " FROM baton.stages s WHERE s.tenant OPERATOR(pg_catalog.=) $1 "
    "AND s.run_id OPERATOR(pg_catalog.=) $2 AND s.is_current",
    2, {UUIDOID, UUIDOID}, nullptr};

// entry_seq: one backward probe of (tenant, run_id, stage, entry_seq).
KeptPlan g_insert = {
    "INSERT INTO baton.stages AS s (tenant, run_id, stage, entry_seq, predecessor_id, inputs, "
    "max_attempts, retry_delay) VALUES ($1, $2, $3, COALESCE((SELECT p.entry_seq FROM baton.stages p "
    "WHERE p.tenant OPERATOR(pg_catalog.=) $1 AND p.run_id OPERATOR(pg_catalog.=) $2 "
    "AND p.stage OPERATOR(pg_catalog.=) $3 ORDER BY p.entry_seq DESC LIMIT 1), 0) OPERATOR(pg_catalog.+) 1, "
    "$4, $5, $6, $7::pg_catalog.interval) "
    "RETURNING " STAGE_COLUMNS_WITH("false"),  // a new stage has no retry deadline
    7, {UUIDOID, UUIDOID, TEXTOID, INT8OID, JSONBOID, INT4OID, TEXTOID}, nullptr};

// g_insert for Citus, which refuses a subquery inside INSERT ... VALUES: INSERT ...
// SELECT over the tenant's own shard.
KeptPlan g_insert_citus = {
    "INSERT INTO baton.stages AS s (tenant, run_id, stage, entry_seq, predecessor_id, inputs, "
    "max_attempts, retry_delay) SELECT $1, $2, $3, COALESCE(pg_catalog.max(p.entry_seq), 0) OPERATOR(pg_catalog.+) 1, "
    "$4, $5, $6, $7::pg_catalog.interval FROM baton.stages p "
    "WHERE p.tenant OPERATOR(pg_catalog.=) $1 AND p.run_id OPERATOR(pg_catalog.=) $2 "
    "AND p.stage OPERATOR(pg_catalog.=) $3 "
    "RETURNING " STAGE_COLUMNS_WITH("false"),
    7, {UUIDOID, UUIDOID, TEXTOID, INT8OID, JSONBOID, INT4OID, TEXTOID}, nullptr};

KeptPlan g_start = {
    "UPDATE baton.stages s SET status = 'running', attempt = s.attempt OPERATOR(pg_catalog.+) 1, "
    "started_at = pg_catalog.now() "
    "WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.id OPERATOR(pg_catalog.=) $2 RETURNING s.inputs",
    2, {UUIDOID, INT8OID}, nullptr};

KeptPlan g_same_result = {
    "SELECT s.result OPERATOR(pg_catalog.=) $3 FROM baton.stages s "
    "WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.id OPERATOR(pg_catalog.=) $2",
    3, {UUIDOID, INT8OID, JSONBOID}, nullptr};

KeptPlan g_complete = {
    "UPDATE baton.stages s SET status = 'completed', result = $3, completed_at = pg_catalog.now() "
    "WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.id OPERATOR(pg_catalog.=) $2",
    3, {UUIDOID, INT8OID, JSONBOID}, nullptr};

KeptPlan g_fail = {
    "UPDATE baton.stages s SET status = 'failed', error = $3, "
    "retry_at = pg_catalog.now() OPERATOR(pg_catalog.+) COALESCE($4, s.retry_delay) "
    "WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.id OPERATOR(pg_catalog.=) $2 RETURNING s.retry_at",
    4, {UUIDOID, INT8OID, TEXTOID, INTERVALOID}, nullptr};

KeptPlan g_context = {
    "SELECT pg_catalog.jsonb_build_object("
    "'run', pg_catalog.jsonb_build_object('id', r.id, 'workflow', r.workflow, 'version', r.version, "
    "'inputs', r.inputs, 'state', r.state), "
    "'stage', pg_catalog.jsonb_build_object('id', s.id, 'name', s.stage, 'entry_seq', s.entry_seq, "
    "'attempt', s.attempt, 'inputs', s.inputs, 'result', s.result)) "
    "FROM baton.runs r JOIN baton.stages s ON s.tenant OPERATOR(pg_catalog.=) r.tenant "
    "AND s.run_id OPERATOR(pg_catalog.=) r.id WHERE " KEY_OF_R " AND s.id OPERATOR(pg_catalog.=) $3",
    3, {UUIDOID, UUIDOID, INT8OID}, nullptr};

KeptPlan g_unchanged = {
    "SELECT s.is_current AND s.status OPERATOR(pg_catalog.=) 'completed' "
    "AND r.generation OPERATOR(pg_catalog.=) $4 AND r.status OPERATOR(pg_catalog.=) 'running' "
    "FROM baton.runs r JOIN baton.stages s ON s.tenant OPERATOR(pg_catalog.=) r.tenant "
    "AND s.run_id OPERATOR(pg_catalog.=) r.id WHERE " KEY_OF_R " AND s.id OPERATOR(pg_catalog.=) $3",
    4, {UUIDOID, UUIDOID, INT8OID, INT8OID}, nullptr};

KeptPlan g_path_match = {
    "SELECT pg_catalog.jsonb_path_match($1, $2::pg_catalog.jsonpath, '{}'::pg_catalog.jsonb, true)",
    2, {JSONBOID, TEXTOID}, nullptr};

// `$4` clears the current flag (a switch) or keeps it (the run ends on this stage).
KeptPlan g_save_decision = {
    "UPDATE baton.stages s SET transition = $3, is_current = $4 "
    "WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.id OPERATOR(pg_catalog.=) $2",
    4, {UUIDOID, INT8OID, JSONBOID, BOOLOID}, nullptr};

KeptPlan g_history = {
    "SELECT s.*, s.id AS chain_id, s.predecessor_id AS chain_predecessor FROM baton.stages s "
    "WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.run_id OPERATOR(pg_catalog.=) $2",
    2, {UUIDOID, UUIDOID}, nullptr};

// The first row of the last statement, which read STAGE_COLUMNS: the status first, so
// that a status the state machine does not know is refused before anything else is read.
Stage read_stage(Spi& spi, const runs::Key& run) {
    const char* stored = spi.cstring_at(0, 4);
    auto status = run::parse_stage_status(stored ? stored : "");
    if (!status)
        throw Error(SqlState::kCorruptHistory,
                    "stage " + std::to_string(spi.int64_at(0, 1)) + " of run " + uuid_text(run.run_id) +
                        " has an unknown status",
                    "Its status is \"" + clip(stored ? stored : "") + "\".");
    Stage s{};
    s.id = spi.int64_at(0, 1);
    s.name = spi.cstring_at(0, 2);
    s.entry_seq = spi.int32_at(0, 3);
    s.status = *status;
    s.attempt = spi.int32_at(0, 5);
    s.max_attempts = spi.int32_at(0, 6);
    bool isnull = false;
    Datum retry_at = spi.value(0, 7, &isnull);
    s.has_retry_at = !isnull;
    s.retry_at = isnull ? 0 : DatumGetTimestampTz(retry_at);
    s.before_retry_deadline = spi.bool_at(0, 8);
    s.inputs = spi.copy_out(0, 9, &isnull);
    s.is_current = spi.bool_at(0, 10);
    s.result = spi.copy_out(0, 11, &isnull);
    s.has_result = !isnull;
    return s;
}

// The values of a statement on (tenant, stage id).
struct StageValues {
    Datum v[4];
    StageValues(const runs::Key& run, std::int64_t id) : v{UUIDPGetDatum(run.tenant), Int64GetDatum(id), 0, 0} {}
};

// The values of a statement on (tenant, run id, stage id).
struct RunStageValues {
    Datum v[4];
    RunStageValues(const runs::Key& run, std::int64_t id)
        : v{UUIDPGetDatum(run.tenant), UUIDPGetDatum(run.run_id), Int64GetDatum(id), 0} {}
};

}  // namespace

// A probe of the primary key, checked against the run.
std::optional<Stage> find(Spi& spi, const runs::Key& run, std::int64_t id) {
    RunStageValues k(run, id);
    if (spi.run(g_find, k.v, nullptr) == 0) return std::nullopt;
    return read_stage(spi, run);
}

// The same probe, reading nothing.
bool is_of_run(Spi& spi, const runs::Key& run, std::int64_t id) {
    RunStageValues k(run, id);
    return spi.run(g_is_of_run, k.v, nullptr) == 1;
}

// The partial unique index holds at most one current stage per run.
std::optional<Stage> current(Spi& spi, const runs::Key& run) {
    Datum key[2] = {UUIDPGetDatum(run.tenant), UUIDPGetDatum(run.run_id)};
    if (spi.run(g_current, key, nullptr) != 1) return std::nullopt;
    return read_stage(spi, run);
}

// The stage's name and retry_delay come from the definition (UTF-8 in the core).
Stage insert(Spi& spi, const runs::Key& run, const definition::StageDef& def, std::int64_t predecessor,
             Datum inputs) {
    Datum values[7] = {UUIDPGetDatum(run.tenant), UUIDPGetDatum(run.run_id), text_from_utf8(def.name),
                       Int64GetDatum(predecessor), inputs, Int32GetDatum(def.max_attempts),
                       text_from_utf8(def.retry_delay)};
    char nulls[8] = "       ";
    if (predecessor == 0) nulls[3] = 'n';
    spi.run(citus::pick(g_insert, g_insert_citus), values, nulls);
    return read_stage(spi, run);
}

// start_stage's write, after run::check_start said so.
Datum start(Spi& spi, const runs::Key& run, std::int64_t id) {
    StageValues k(run, id);
    spi.run(g_start, k.v, nullptr);
    bool isnull = false;
    return spi.copy_out(0, 1, &isnull);
}

// jsonb equality, as the contract reads "the same result".
bool same_result(Spi& spi, const runs::Key& run, std::int64_t id, Jsonb* result) {
    StageValues k(run, id);
    k.v[2] = JsonbPGetDatum(result);
    return spi.run(g_same_result, k.v, nullptr) == 1 && spi.bool_at(0, 1);
}

// complete_stage's write, after run::check_settle said so.
void complete(Spi& spi, const runs::Key& run, std::int64_t id, Jsonb* result) {
    StageValues k(run, id);
    k.v[2] = JsonbPGetDatum(result);
    spi.run(g_complete, k.v, nullptr);
}

// fail_stage's write, after run::check_settle said so.
TimestampTz fail(Spi& spi, const runs::Key& run, std::int64_t id, text* error, Interval* retry_in) {
    StageValues k(run, id);
    k.v[2] = PointerGetDatum(error);
    k.v[3] = retry_in ? IntervalPGetDatum(retry_in) : 0;
    char nulls[5] = "    ";
    if (retry_in == nullptr) nulls[3] = 'n';
    spi.run(g_fail, k.v, nulls);
    bool isnull = false;
    return DatumGetTimestampTz(spi.value(0, 1, &isnull));
}

// One row of runs joined to stages, built by jsonb_build_object.
Datum decision_context(Spi& spi, const runs::Key& run, std::int64_t id) {
    RunStageValues k(run, id);
    spi.run(g_context, k.v, nullptr);
    bool isnull = false;
    return spi.copy_out(0, 1, &isnull);
}

// Read again after the decide function returned.
bool unchanged(Spi& spi, const runs::Key& run, std::int64_t id, std::int64_t generation) {
    RunStageValues k(run, id);
    k.v[3] = Int64GetDatum(generation);
    return spi.run(g_unchanged, k.v, nullptr) == 1 && spi.bool_at(0, 1);
}

// jsonb_path_match in silent mode: a path that errors on this context does not match.
bool path_matches(Spi& spi, Datum context, Datum path) {
    Datum values[2] = {context, path};
    spi.run(g_path_match, values, nullptr);
    return spi.bool_at(0, 1);
}

// The decision is saved on the stage it was taken at.
void save_decision(Spi& spi, const runs::Key& run, std::int64_t id, Jsonb* decision, bool stays_current) {
    StageValues k(run, id);
    k.v[2] = JsonbPGetDatum(decision);
    k.v[3] = BoolGetDatum(stays_current);
    spi.run(g_save_decision, k.v, nullptr);
}

// Reads every stage of the run with its chain columns after the result's own columns,
// orders them with chain::chain_order, and appends them in that order.
void emit_history(Spi& spi, const runs::Key& run, ReturnSetInfo* rsinfo) {
    Datum key[2] = {UUIDPGetDatum(run.tenant), UUIDPGetDatum(run.run_id)};
    std::uint64_t n = spi.run(g_history, key, nullptr);
    int natts = rsinfo->setDesc->natts;  // the columns of baton.stages, then chain_id, chain_predecessor
    std::vector<chain::Link> links;
    links.reserve(n);
    for (std::uint64_t row = 0; row < n; row++) {
        bool isnull = false;
        chain::Link link{spi.int64_at(row, natts + 1), 0, false};
        Datum pred = spi.value(row, natts + 2, &isnull);
        if (!isnull) {
            link.predecessor = DatumGetInt64(pred);
            link.has_predecessor = true;
        }
        links.push_back(link);
    }
    std::vector<std::size_t> order = chain::chain_order(links, uuid_text(run.run_id));
    for (std::size_t row : order) spi.emit_row(rsinfo, row);
}

}  // namespace baton::pg::stages
