// The delivery state machine and the rules on delivery arguments, free of Postgres.
//
//   pending --claim--> claimed --finish--> finished | failed
//   claimed --retry/reap--> pending            (attempts left)
//   claimed --retry/reap--> failed             (attempts spent)
//
// The Postgres layer applies the common case in one fenced UPDATE; when that UPDATE
// matches no row, it reads the row and asks these functions what the caller is owed.
#pragma once
#ifdef POSTGRES_H
#error "core headers are included before postgres.h (its macros rename libc functions)"
#endif

#include <cstdint>
#include <optional>
#include <string_view>

namespace baton::delivery {

enum class Status { kPending, kClaimed, kFinished, kFailed };

// "pending" -> kPending ...; nullopt for anything else.
std::optional<Status> parse_status(std::string_view text);
// The stored spelling of a status.
const char* status_name(Status s);
// True for finished and failed: the row will never change again.
bool is_settled(Status s);

// The outcome argument of finish: "finished" or "failed", else 22023.
Status parse_outcome(std::string_view text);

// What a lease call (renew, finish, retry) is owed, given the row as stored.
enum class Verdict {
    kApply,         // the caller holds the lease: write
    kReturnStored,  // the row was settled at the caller's generation: answer, write nothing
    kLeaseLost,     // DU001
    kSettled,       // DU007: renew of a row settled at the caller's generation
};

struct Row {
    Status status;
    std::int64_t generation;
    std::int32_t attempts;
    std::int32_t max_attempts;
};

// finish and retry: apply while claimed at the caller's generation; once settled at that
// generation, repeat the stored answer; every other caller has lost the lease.
Verdict settle_verdict(const Row& row, std::int64_t caller_generation);
// renew: apply while claimed at the caller's generation; a settled row has no lease.
Verdict renew_verdict(const Row& row, std::int64_t caller_generation);

// Where retry and reap send a claimed row: pending while attempts remain, else failed.
Status give_back_status(std::int32_t attempts, std::int32_t max_attempts);

// The retry delay when none is given: 1 s x 2^(attempts - 1), at most one hour.
std::int64_t backoff_usec(std::int32_t attempts);

// The rules of a stored delivery row that its table's triggers enforce for every writer
// (direct SQL included), in place of CHECK constraints, which Postgres re-reads from the
// catalog text on every statement: a status among the four, max_attempts at least 1.
// Throws baton::Error (23514) naming the table, the column, the value and delivery `id`.
void check_stored_row(std::string_view status, std::int32_t max_attempts, std::int64_t id);

// Argument rules; each throws baton::Error (22023) naming the argument.
void check_target_chars(std::int64_t chars);
void check_dedup_key_chars(std::int64_t chars);
void check_max_attempts(std::int64_t max_attempts);
void check_lease_usec(std::int64_t usec);
void check_max_items(std::int64_t max_items);
void check_delay_usec(std::int64_t usec);
void check_error_bytes(std::int64_t bytes);
void check_reap_rows(std::int64_t max_rows);
void check_json_bytes(const char* argument, std::int64_t bytes, std::int64_t limit);

}  // namespace baton::delivery
