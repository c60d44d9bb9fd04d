// The rules of runs and their stages, free of Postgres.
//
//   run:   submitted -> approved -> running -> completed | failed;  cancelled from any
//          non-terminal state.
//   stage: pending -> running -> completed | failed; a failed stage is retried as the
//          same row after its deadline, until its max_attempts are spent.
#pragma once
#ifdef POSTGRES_H
#error "core headers are included before postgres.h (its macros rename libc functions)"
#endif

#include <cstdint>
#include <optional>
#include <string_view>

namespace baton::run {

enum class Status { kSubmitted, kApproved, kRunning, kCompleted, kFailed, kCancelled };
enum class StageStatus { kPending, kRunning, kCompleted, kFailed };

std::optional<Status> parse_status(std::string_view text);
const char* status_name(Status s);
std::optional<StageStatus> parse_stage_status(std::string_view text);
const char* stage_status_name(StageStatus s);
// completed, failed and cancelled runs never change again.
bool is_terminal(Status s);

// Every refusal names its object: `run_id` and `tenant` are the uuids as text, as the
// caller has them; a stage is named by its id.

// DU008: run `run_id` does not exist in `tenant`.
[[noreturn]] void throw_not_found(std::string_view run_id, std::string_view tenant);
// An owner call holds the run only if someone holds its lease and the call carries the
// run's generation: DU001 otherwise (superseded, released, never acquired).
void check_owner(std::int64_t caller_generation, std::int64_t run_generation, bool owned, std::string_view run_id);

// What transition_stage does with a running run's current stage.
enum class Step {
    kReturnStage,  // pending or running, or failed past its deadline: hand it to a handler
    kWait,         // failed, before its retry deadline
    kFailRun,      // failed with its attempts spent: the run fails
    kDecide,       // completed: decide the successor
};
Step next_step(StageStatus status, int attempt, int max_attempts, bool before_retry_deadline);

// What approve does: DU007 for a cancelled run or one approved by someone else, DU006
// for a digest that differs; kApprove for a submitted run; kNothing for a repeat.
enum class Approval { kApprove, kNothing };
Approval approve_verdict(Status status, bool digest_matches, bool approved_by_someone_else, std::string_view run_id);

// What cancel does: DU007 for a completed or failed run; nothing for a cancelled one.
enum class Cancellation { kCancel, kNothing };
Cancellation cancel_verdict(Status status, std::string_view run_id);

// acquire_run: the lease goes to the caller unless the run is terminal or another owner
// holds an unexpired lease (then NULL, nothing changes). The same owner re-acquiring
// gets a new generation.
bool may_acquire(Status status, bool lease_unexpired, bool same_owner);

// start_stage: a current stage that is pending, running (a restarted handler), or
// failed past its deadline with attempts left; DU007 otherwise, naming why.
void check_start(Status run, StageStatus stage, bool is_current, bool before_retry_deadline,
                 int attempt, int max_attempts, std::string_view run_id, std::int64_t stage_id);
// complete_stage and fail_stage: the current stage, running, of a running run; DU007
// otherwise. (A repeated complete_stage with the same result is handled by the caller.)
void check_settle(Status run, StageStatus stage, bool is_current, const char* call, std::string_view run_id,
                  std::int64_t stage_id);


}  // namespace baton::run
