// What the stage calls of a run's owner share (stages.cpp and transition.cpp): their
// arguments, the run locked and checked against the caller's generation, and a stage row.
#pragma once

#include <cstdint>
#include <string>

#include "core/run.hpp"
// (core headers before Postgres headers)
#include "pg/spi.hpp"

namespace baton::api {

// The key of the run in a statement whose run is `r`: $1 the tenant, $2 the run id.
#define KEY_OF_R "r.tenant OPERATOR(pg_catalog.=) $1 AND r.id OPERATOR(pg_catalog.=) $2"

// The stage columns read_stage reads, BEFORE_DEADLINE being `retry_at > now()` or, for a
// RETURNING list (no now() there, for Citus), a constant.
#define STAGE_COLUMNS_WITH(BEFORE_DEADLINE)                                                   \
    "s.id, s.stage, s.entry_seq, s.status, s.attempt, s.max_attempts, s.retry_at, "           \
    BEFORE_DEADLINE ", s.inputs, s.is_current, s.result"
#define STAGE_COLUMNS STAGE_COLUMNS_WITH("s.retry_at OPERATOR(pg_catalog.>) pg_catalog.now()")

// The arguments every owner call carries.
struct OwnerCall {
    pg_uuid_t* tenant;
    pg_uuid_t* run_id;
    std::int64_t generation;
};

// Reads (tenant, run_id, generation), the first three arguments of every owner call.
OwnerCall owner_call_args(FunctionCallInfo fcinfo);

// The call's run as text ("run <uuid>"), for the messages that name it.
std::string run_text(const OwnerCall& call);

// The locked run as the owner sees it.
struct LockedRun {
    run::Status status;
    text* workflow;  // copied out of SPI memory
    int version;
};

// Locks the run (NO KEY UPDATE) and checks the owner's generation: DU008, DU001.
LockedRun lock_run(pg::Spi& spi, const OwnerCall& call);

// A stage row read with STAGE_COLUMNS; pointers live in SPI memory until the next query.
struct StageRow {
    std::int64_t id;
    char* name;
    std::int32_t entry_seq;
    run::StageStatus status;
    std::int32_t attempt;
    std::int32_t max_attempts;
    bool has_retry_at;
    TimestampTz retry_at;
    bool before_retry_deadline;
    Datum inputs;  // jsonb, copied out of SPI memory
    bool is_current;
    bool has_result;
    Datum result;  // jsonb, copied out of SPI memory, when has_result
};

// The first row of the last statement, which read STAGE_COLUMNS; DU004 for a status
// the state machine does not know.
StageRow read_stage(pg::Spi& spi, const OwnerCall& call);

}  // namespace baton::api
