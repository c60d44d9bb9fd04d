// The one way the entry points read and write baton.stages: every statement on the
// table is here, and each answer comes back as a plain struct. What a stage owes
// (run::next_step, check_start, check_settle) is src/core/run.hpp's. A status the core
// does not know is DU004 naming the stage and its run.
#pragma once

#include <cstdint>
#include <optional>

#include "core/definition.hpp"
#include "core/run.hpp"
// (core headers before Postgres headers)
#include "pg/stores/run_store.hpp"

namespace baton::pg::stages {

// A stage as the owner calls and transition_stage read it. `name` lives in SPI memory
// until the next statement; the jsonb columns are copied out.
struct Stage {
    std::int64_t id;
    char* name;
    std::int32_t entry_seq;
    run::StageStatus status;
    std::int32_t attempt;
    std::int32_t max_attempts;
    bool has_retry_at;
    TimestampTz retry_at;
    bool before_retry_deadline;  // retry_at > now()
    Datum inputs;
    bool is_current;
    bool has_result;
    Datum result;  // when has_result
};

// Stage `id` of the run; nullopt when the run has no such stage.
std::optional<Stage> find(Spi& spi, const runs::Key& run, std::int64_t id);
// Whether stage `id` is one of the run's (a probe, nothing read).
bool is_of_run(Spi& spi, const runs::Key& run, std::int64_t id);
// The run's current stage: one probe of the partial unique index stages_current.
std::optional<Stage> current(Spi& spi, const runs::Key& run);
// A new current stage of `def` after `predecessor` (0: the start stage) with these
// inputs (jsonb); its entry_seq counts the run's earlier entries into that stage.
Stage insert(Spi& spi, const runs::Key& run, const definition::StageDef& def, std::int64_t predecessor,
             Datum inputs);

// start_stage: running, attempt + 1; returns its inputs (jsonb, copied out).
Datum start(Spi& spi, const runs::Key& run, std::int64_t id);
// complete_stage: whether the saved result equals `result`; then the write.
bool same_result(Spi& spi, const runs::Key& run, std::int64_t id, Jsonb* result);
void complete(Spi& spi, const runs::Key& run, std::int64_t id, Jsonb* result);
// fail_stage: the error and a retry deadline (now + retry_in, or the stage's
// retry_delay when retry_in is nullptr); returns the deadline.
TimestampTz fail(Spi& spi, const runs::Key& run, std::int64_t id, text* error, Interval* retry_in);

// The context a decision sees, {"run": {...}, "stage": {...}} (jsonb, copied out).
Datum decision_context(Spi& spi, const runs::Key& run, std::int64_t id);
// Whether what a transition read before the decide function ran still holds: the stage
// current and completed, the run running at `generation`.
bool unchanged(Spi& spi, const runs::Key& run, std::int64_t id, std::int64_t generation);
// Whether the context matches a `when` jsonpath (a text datum).
bool path_matches(Spi& spi, Datum context, Datum path);
// Saves the decision on the stage it leaves; `stays_current` when the run ends there.
void save_decision(Spi& spi, const runs::Key& run, std::int64_t id, Jsonb* decision, bool stays_current);

// run_history: the run's stages appended to rsinfo in chain order (DU004 for a broken
// chain); the caller has checked that the run exists.
void emit_history(Spi& spi, const runs::Key& run, ReturnSetInfo* rsinfo);

}  // namespace baton::pg::stages
