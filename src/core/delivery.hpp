// The delivery state machine and the rules on delivery arguments, free of Postgres.
//
//   pending --claim--> claimed --finish--> finished | failed
//   claimed --retry/reap--> pending            (attempts left)
//   claimed --retry/reap--> failed             (attempts spent)
//   pending | claimed --cancel--> cancelled    (generation + 1: a holder is fenced)
//   failed | cancelled --redrive--> pending    (attempts 0, due now, generation kept)
//
// Every decision about a delivery is made here, once: which row a claim may take, who
// holds the lease, what a settling call owes its caller, where retry and reap send a row.
// Both ways pg/deliveries/delivery_store writes the table (direct heap access and SQL statements)
// ask these functions; the statements' WHERE clauses only select and lock rows.
#pragma once
#ifdef POSTGRES_H
#error "core headers are included before postgres.h (its macros rename libc functions)"
#endif

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace baton::delivery {

enum class Status { kPending, kClaimed, kFinished, kFailed, kCancelled };

// The stored spelling of each status: the one list. status_name() returns them, and the
// SQL statements splice them in as literals.
#define BATON_STATUS_PENDING "pending"
#define BATON_STATUS_CLAIMED "claimed"
#define BATON_STATUS_FINISHED "finished"
#define BATON_STATUS_FAILED "failed"
#define BATON_STATUS_CANCELLED "cancelled"

// "pending" -> kPending ...; nullopt for anything else.
std::optional<Status> parse_status(std::string_view text);
// The stored spelling of a status.
const char* status_name(Status s);
// True for finished, failed and cancelled: no holder may write the row again (only a
// redrive sends a failed or cancelled one back to pending).
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

// True when a row may be claimed at `now`: pending, and due (run_after and now are
// microseconds of one clock).
bool claimable(Status status, std::int64_t run_after, std::int64_t now);
// True when the caller holds the row's lease: claimed at the caller's generation.
bool holds_lease(const Row& row, std::int64_t caller_generation);
// The row a claim leaves: claimed, generation + 1, attempts + 1.
Row claimed(const Row& row);

// finish and retry: apply while claimed at the caller's generation; once settled at that
// generation, repeat the stored answer; every other caller has lost the lease.
Verdict settle_verdict(const Row& row, std::int64_t caller_generation);
// renew: apply while claimed at the caller's generation; a settled row has no lease.
Verdict renew_verdict(const Row& row, std::int64_t caller_generation);

// What finish_batch answers for one (id, generation) pair, given its row as found after
// the batch's write (nullptr: no such row): "not_found"; the stored status once settled at
// that generation; else "lease_lost".
const char* batch_answer(const Row* row, std::int64_t caller_generation);

// Where retry and reap send a claimed row: pending while attempts remain, else failed.
Status give_back_status(std::int32_t attempts, std::int32_t max_attempts);

// What a retry writes to the row its caller holds: the status give_back_status() picks;
// back to pending under generation + 1, after the caller's delay or backoff_usec; or
// failed and settled at the same generation.
struct GiveBack {
    Status status;
    std::int64_t generation;
    bool settles;               // failed: settled_at is set, run_after kept
    std::int64_t backoff_usec;  // the delay when the caller gives none (pending only)
};
GiveBack retry_give_back(const Row& row);

// The retry delay when none is given: 1 s x 2^(attempts - 1), at most one hour.
std::int64_t backoff_usec(std::int32_t attempts);

// The rules of a stored delivery row that its table's triggers enforce for every writer
// (direct SQL included), in place of CHECK constraints, which Postgres re-reads from the
// catalog text on every statement: a status among the five, max_attempts at least 1.
// Throws baton::Error (23514) naming the table, the column, the value and delivery `id`.
void check_stored_row(std::string_view status, std::int32_t max_attempts, std::int64_t id);

// What a cancel does to a row as stored.
enum class CancelVerdict {
    kApply,       // pending or claimed: cancel it
    kAlready,     // cancelled already: answer 'cancelled', write nothing
    kSettled,     // finished or failed: DU007
};
CancelVerdict cancel_verdict(Status status);
// The row a cancel leaves: cancelled, generation + 1 (its holder, if any, is fenced),
// attempts kept.
Row cancelled(const Row& row);

// True for the rows a redrive sends back to pending: failed and cancelled.
bool redrivable(Status status);
// The row a redrive leaves: pending, attempts 0, generation kept (the next claim raises it).
Row redriven(const Row& row);

// Why redrive by ids skipped delivery `id` of `target`: it does not exist (exists false),
// is of another target (found_target), is not failed nor cancelled (status), or was
// failed or cancelled but held by another transaction. One sentence naming the id.
std::string redrive_skip_reason(std::int64_t id, std::string_view target, bool exists, std::string_view found_target,
                                std::string_view status);

// Argument rules; each throws baton::Error (22023) naming the argument.
void check_target_chars(std::int64_t chars);
void check_dedup_key_chars(std::int64_t chars);
// A delivery's key (and a limit's): 1 to kKeyMaxChars characters.
void check_key_chars(std::int64_t chars);
void check_max_attempts(std::int64_t max_attempts);
void check_lease_usec(std::int64_t usec);
void check_max_items(std::int64_t max_items);
void check_delay_usec(std::int64_t usec);
void check_error_bytes(std::int64_t bytes);
void check_reap_rows(std::int64_t max_rows);
// cancel_delivery's reason: at most as many bytes as retry's error.
void check_reason_bytes(std::int64_t bytes);
// redrive's max_rows: the range of reap's.
void check_redrive_rows(std::int64_t max_rows);
void check_json_bytes(const char* argument, std::int64_t bytes, std::int64_t limit);

}  // namespace baton::delivery
