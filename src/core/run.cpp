// Rules of runs and stages (see run.hpp).
#include "core/run.hpp"

#include <string>

#include "core/error.hpp"

namespace baton::run {

std::optional<Status> parse_status(std::string_view text) {
    if (text == "submitted") return Status::kSubmitted;
    if (text == "approved") return Status::kApproved;
    if (text == "running") return Status::kRunning;
    if (text == "completed") return Status::kCompleted;
    if (text == "failed") return Status::kFailed;
    if (text == "cancelled") return Status::kCancelled;
    return std::nullopt;
}

const char* status_name(Status s) {
    switch (s) {
        case Status::kSubmitted: return "submitted";
        case Status::kApproved: return "approved";
        case Status::kRunning: return "running";
        case Status::kCompleted: return "completed";
        case Status::kFailed: return "failed";
        case Status::kCancelled: return "cancelled";
    }
    return "submitted";
}

std::optional<StageStatus> parse_stage_status(std::string_view text) {
    if (text == "pending") return StageStatus::kPending;
    if (text == "running") return StageStatus::kRunning;
    if (text == "completed") return StageStatus::kCompleted;
    if (text == "failed") return StageStatus::kFailed;
    return std::nullopt;
}

const char* stage_status_name(StageStatus s) {
    switch (s) {
        case StageStatus::kPending: return "pending";
        case StageStatus::kRunning: return "running";
        case StageStatus::kCompleted: return "completed";
        case StageStatus::kFailed: return "failed";
    }
    return "pending";
}

bool is_terminal(Status s) {
    return s == Status::kCompleted || s == Status::kFailed || s == Status::kCancelled;
}

namespace {

// "run <id>", the object of a run's refusals.
std::string run_text(std::string_view run_id) { return "run " + std::string(run_id); }

// "stage <id> of run <id>", the object of a stage's refusals.
std::string stage_text(std::int64_t stage_id, std::string_view run_id) {
    return "stage " + std::to_string(stage_id) + " of " + run_text(run_id);
}

}  // namespace

void throw_not_found(std::string_view run_id, std::string_view tenant) {
    throw Error(SqlState::kNotFound, run_text(run_id) + " does not exist in tenant " + std::string(tenant),
                "Runs are addressed by (tenant, run_id).");
}

void check_owner(std::int64_t caller_generation, std::int64_t run_generation, bool owned, std::string_view run_id) {
    if (owned && caller_generation == run_generation) return;
    throw Error(SqlState::kLeaseLost, "lease on " + run_text(run_id) + " is lost",
                "The call carries generation " + std::to_string(caller_generation) + "; the run is at generation " +
                    std::to_string(run_generation) + (owned ? "." : " and nobody holds its lease."),
                "Another owner acquired the run, or the lease was released; stop working on it.");
}

Step next_step(StageStatus status, int attempt, int max_attempts, bool before_retry_deadline) {
    switch (status) {
        case StageStatus::kPending:
        case StageStatus::kRunning: return Step::kReturnStage;
        case StageStatus::kCompleted: return Step::kDecide;
        case StageStatus::kFailed:
            if (attempt >= max_attempts) return Step::kFailRun;
            return before_retry_deadline ? Step::kWait : Step::kReturnStage;
    }
    return Step::kReturnStage;
}

Approval approve_verdict(Status status, bool digest_matches, bool approved_by_someone_else, std::string_view run_id) {
    if (status == Status::kCancelled)
        throw Error(SqlState::kInvalidState, run_text(run_id) + " is cancelled", "A cancelled run cannot be approved.");
    if (!digest_matches)
        throw Error(SqlState::kDigestMismatch, "approval digest does not match the inputs of " + run_text(run_id),
                    "The approval binds to the digest of the inputs that were submitted.",
                    "Read the digest with baton.inputs_digest() and approve what it names.");
    if (status == Status::kSubmitted) return Approval::kApprove;
    if (approved_by_someone_else)
        throw Error(SqlState::kInvalidState, run_text(run_id) + " is already approved",
                    std::string("The run is ") + status_name(status) + " under another approver's approval.");
    return Approval::kNothing;
}

Cancellation cancel_verdict(Status status, std::string_view run_id) {
    if (status == Status::kCancelled) return Cancellation::kNothing;
    if (is_terminal(status))
        throw Error(SqlState::kInvalidState, run_text(run_id) + " is already " + status_name(status),
                    "Only a run that has not ended can be cancelled.");
    return Cancellation::kCancel;
}

bool may_acquire(Status status, bool lease_unexpired, bool same_owner) {
    if (is_terminal(status)) return false;
    return !lease_unexpired || same_owner;
}

void check_start(Status run, StageStatus stage, bool is_current, bool before_retry_deadline,
                 int attempt, int max_attempts, std::string_view run_id, std::int64_t stage_id) {
    if (run != Status::kRunning)
        throw Error(SqlState::kInvalidState, run_text(run_id) + " is " + status_name(run),
                    "Stages start only while their run is running.");
    if (!is_current)
        throw Error(SqlState::kInvalidState, stage_text(stage_id, run_id) + " is not its current stage",
                    "Only the current stage runs; call baton.transition_stage() for it.");
    if (stage == StageStatus::kCompleted)
        throw Error(SqlState::kInvalidState, stage_text(stage_id, run_id) + " is already completed",
                    "A completed stage does not start again; transition to its successor.");
    if (stage == StageStatus::kFailed) {
        if (attempt >= max_attempts)
            throw Error(SqlState::kInvalidState, stage_text(stage_id, run_id) + " has spent its attempts",
                        "Its run fails at the next transition.");
        if (before_retry_deadline)
            throw Error(SqlState::kInvalidState, stage_text(stage_id, run_id) + " is waiting for its retry deadline",
                        "A failed stage starts again after its retry_at.");
    }
}

void check_settle(Status run, StageStatus stage, bool is_current, const char* call, std::string_view run_id,
                  std::int64_t stage_id) {
    if (run != Status::kRunning)
        throw Error(SqlState::kInvalidState, run_text(run_id) + " is " + status_name(run),
                    std::string(call) + " applies only while the run is running.");
    if (!is_current)
        throw Error(SqlState::kInvalidState, stage_text(stage_id, run_id) + " is not its current stage",
                    std::string(call) + " applies only to the current stage.");
    if (stage != StageStatus::kRunning)
        throw Error(SqlState::kInvalidState, stage_text(stage_id, run_id) + " is " + stage_status_name(stage),
                    std::string(call) + " applies to a running stage; start it with baton.start_stage().");
}


}  // namespace baton::run
