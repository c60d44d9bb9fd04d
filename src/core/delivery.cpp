// Rules of the delivery state machine (see delivery.hpp).
#include "core/delivery.hpp"

#include <string>

#include "core/error.hpp"
#include "core/limits.hpp"

namespace baton::delivery {

namespace {

// "0 s" style rendering of a microsecond count for error details.
std::string seconds_text(std::int64_t usec) {
    return std::to_string(usec / limits::kUsecPerSec) + " seconds";
}

// Throws 22023 unless lo <= value <= hi: "<name> is between <lo> and <hi>, not <value>."
void check_between(const char* name, std::int64_t value, std::int64_t lo, std::int64_t hi) {
    if (value < lo || value > hi)
        throw_invalid_argument(name, std::string(name) + " is between " + std::to_string(lo) + " and " +
                                         std::to_string(hi) + ", not " + std::to_string(value) + ".");
}

}  // namespace

// The pending status is tried first: the direct claim asks for it on every row it scans.
std::optional<Status> parse_status(std::string_view text) {
    for (Status s : {Status::kPending, Status::kClaimed, Status::kFinished, Status::kFailed, Status::kCancelled})
        if (text == status_name(s)) return s;
    return std::nullopt;
}

void check_stored_row(std::string_view status, std::int32_t max_attempts, std::int64_t id) {
    // The words are built only for a refusal: the fence checks every row a statement writes.
    auto row = [id] { return "delivery " + std::to_string(id) + " of relation \"deliveries\""; };
    if (!parse_status(status))
        throw Error(SqlState::kCheckViolation,
                    "new row of " + row() + " has invalid value \"" + clip(status) + "\" in column \"status\"",
                    "Column \"status\" of baton.deliveries is one of " BATON_STATUS_PENDING ", " BATON_STATUS_CLAIMED
                    ", " BATON_STATUS_FINISHED ", " BATON_STATUS_FAILED
                    ", " BATON_STATUS_CANCELLED ".");
    if (max_attempts < 1)
        throw Error(SqlState::kCheckViolation,
                    "new row of " + row() + " has invalid value " + std::to_string(max_attempts) +
                        " in column \"max_attempts\"",
                    "Column \"max_attempts\" of baton.deliveries is at least 1.");
}

const char* status_name(Status s) {
    switch (s) {
        case Status::kPending: return BATON_STATUS_PENDING;
        case Status::kClaimed: return BATON_STATUS_CLAIMED;
        case Status::kFinished: return BATON_STATUS_FINISHED;
        case Status::kFailed: return BATON_STATUS_FAILED;
        case Status::kCancelled: return BATON_STATUS_CANCELLED;
    }
    return BATON_STATUS_PENDING;
}

bool is_settled(Status s) { return s == Status::kFinished || s == Status::kFailed || s == Status::kCancelled; }

Status parse_outcome(std::string_view text) {
    if (text == status_name(Status::kFinished)) return Status::kFinished;
    if (text == status_name(Status::kFailed)) return Status::kFailed;
    throw_invalid_argument("outcome", "The outcome must be \"finished\" or \"failed\", not \"" +
                                          clip(text) + "\".");
}

// The claim statements' WHERE says the same for a set of rows (docs/internals/architecture.md).
bool claimable(Status status, std::int64_t run_after, std::int64_t now) {
    return status == Status::kPending && run_after <= now;
}

// The generation is the fencing token: only the claim that set it holds the lease.
bool holds_lease(const Row& row, std::int64_t caller_generation) {
    return row.status == Status::kClaimed && row.generation == caller_generation;
}

// attempts counts claims, so a row claimed max_attempts times is given back as failed.
Row claimed(const Row& row) { return {Status::kClaimed, row.generation + 1, row.attempts + 1, row.max_attempts}; }

// A repeat of the settling call (a retried finish) gets the stored answer, not DU001.
Verdict settle_verdict(const Row& row, std::int64_t caller_generation) {
    if (holds_lease(row, caller_generation)) return Verdict::kApply;
    if (row.generation == caller_generation && is_settled(row.status)) return Verdict::kReturnStored;
    return Verdict::kLeaseLost;  // another generation, or pending at this one: never claimed by it
}

// settle_verdict(), except that a settled row has no lease to extend (DU007).
Verdict renew_verdict(const Row& row, std::int64_t caller_generation) {
    Verdict v = settle_verdict(row, caller_generation);
    return v == Verdict::kReturnStored ? Verdict::kSettled : v;
}

// settle_verdict() per pair, answered in words so that one lost lease fails no other pair.
const char* batch_answer(const Row* row, std::int64_t caller_generation) {
    if (row == nullptr) return "not_found";
    return settle_verdict(*row, caller_generation) == Verdict::kReturnStored ? status_name(row->status)
                                                                             : "lease_lost";
}

Status give_back_status(std::int32_t attempts, std::int32_t max_attempts) {
    return attempts >= max_attempts ? Status::kFailed : Status::kPending;
}

// A failed row keeps its generation (the retrying holder settled it); a pending one gets
// the next, so the old holder's later calls are fenced out.
GiveBack retry_give_back(const Row& row) {
    Status next = give_back_status(row.attempts, row.max_attempts);
    if (next == Status::kFailed) return {next, row.generation, true, 0};
    return {next, row.generation + 1, false, backoff_usec(row.attempts)};
}

std::int64_t backoff_usec(std::int32_t attempts) {
    if (attempts < 1) attempts = 1;
    // 2^12 s already exceeds the one-hour cap; stop doubling there.
    if (attempts > 13) return limits::kBackoffCapUsec;
    std::int64_t usec = limits::kBackoffBaseUsec << (attempts - 1);
    return usec > limits::kBackoffCapUsec ? limits::kBackoffCapUsec : usec;
}

// Only work not yet settled can be cancelled; a repeat is answered, a finish or failure kept.
CancelVerdict cancel_verdict(Status status) {
    switch (status) {
        case Status::kPending:
        case Status::kClaimed: return CancelVerdict::kApply;
        case Status::kCancelled: return CancelVerdict::kAlready;
        default: return CancelVerdict::kSettled;
    }
}

// The next generation fences the holder of a claimed row: its renew, finish and retry
// carry the old one and get DU001.
Row cancelled(const Row& row) { return {Status::kCancelled, row.generation + 1, row.attempts, row.max_attempts}; }

bool redrivable(Status status) { return status == Status::kFailed || status == Status::kCancelled; }

std::string redrive_skip_reason(std::int64_t id, std::string_view target, bool exists, std::string_view found_target,
                                std::string_view status) {
    std::string d = "Delivery " + std::to_string(id);
    if (!exists) return d + " does not exist.";
    if (found_target != target)
        return d + " is of target \"" + clip(found_target) + "\", not \"" + clip(target) + "\".";
    if (status != status_name(Status::kFailed) && status != status_name(Status::kCancelled))
        return d + " is " + std::string(status) + ": only failed and cancelled deliveries are redriven.";
    return d + " is being changed by another transaction: redrive it again once that one ends.";
}

// The generation stays: no holder has it (a failed row's holder settled it, a cancelled
// one's was fenced), and the next claim raises it.
Row redriven(const Row& row) { return {Status::kPending, row.generation, 0, row.max_attempts}; }

void check_target_chars(std::int64_t chars) {
    if (chars < 1 || chars > limits::kTargetMaxChars)
        throw_invalid_argument("target", "A target has 1 to " +
                                             std::to_string(limits::kTargetMaxChars) +
                                             " characters; this one has " + std::to_string(chars) + ".");
}

void check_dedup_key_chars(std::int64_t chars) {
    if (chars < 1 || chars > limits::kDedupKeyMaxChars)
        throw_invalid_argument("dedup_key", "A dedup key has 1 to " +
                                                std::to_string(limits::kDedupKeyMaxChars) +
                                                " characters; this one has " + std::to_string(chars) +
                                                ".");
}

void check_key_chars(std::int64_t chars) {
    if (chars < 1 || chars > limits::kKeyMaxChars)
        throw_invalid_argument("key", "A key has 1 to " + std::to_string(limits::kKeyMaxChars) +
                                          " characters; this one has " + std::to_string(chars) + ".");
}

void check_max_attempts(std::int64_t max_attempts) { check_between("max_attempts", max_attempts, 1, limits::kMaxAttempts); }

void check_lease_usec(std::int64_t usec) {
    if (usec <= 0 || usec > limits::kMaxLeaseUsec)
        throw_invalid_argument("lease", "A lease is longer than zero and at most 365 days; got " +
                                            seconds_text(usec) + ".");
}

void check_max_items(std::int64_t max_items) { check_between("max_items", max_items, 1, limits::kMaxItems); }

void check_delay_usec(std::int64_t usec) {
    if (usec < 0 || usec > limits::kMaxDelayUsec)
        throw_invalid_argument("delay", "A retry delay is between zero and 365 days; got " +
                                            seconds_text(usec) + ".");
}

void check_error_bytes(std::int64_t bytes) {
    if (bytes > limits::kMaxErrorBytes)
        throw_invalid_argument("error", "An error text has at most " +
                                            std::to_string(limits::kMaxErrorBytes) + " bytes; this one has " +
                                            std::to_string(bytes) + ".");
}

void check_reap_rows(std::int64_t max_rows) { check_between("max_rows", max_rows, 1, limits::kMaxReapRows); }

void check_reason_bytes(std::int64_t bytes) {
    if (bytes > limits::kMaxErrorBytes)
        throw_invalid_argument("reason", "A reason has at most " + std::to_string(limits::kMaxErrorBytes) +
                                             " bytes; this one has " + std::to_string(bytes) + ".");
}

void check_redrive_rows(std::int64_t max_rows) { check_between("max_rows", max_rows, 1, limits::kMaxReapRows); }

void check_json_bytes(const char* argument, std::int64_t bytes, std::int64_t limit) {
    if (bytes > limit)
        throw_invalid_argument(argument, std::string(argument) + " is " + std::to_string(bytes) +
                                             " bytes; baton.max_payload_bytes allows " +
                                             std::to_string(limit) + ".");
}

}  // namespace baton::delivery
