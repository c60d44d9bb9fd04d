// The one way the entry points read and write baton.runs: every statement on the table
// is here, and each answer comes back as a plain struct. Decisions about a run (may it
// be acquired, approved, cancelled; does the caller own it) are src/core/run.hpp's; the
// store reads and writes what they decided. A status the core does not know is DU004
// naming the run.
#pragma once

#include <cstdint>
#include <optional>

#include "core/run.hpp"
// (core headers before Postgres headers)
#include "pg/runtime/spi.hpp"

namespace baton::pg::runs {

// The key of a run in a statement whose run is `r`: $1 the tenant, $2 the run id.
#define BATON_KEY_OF_R "r.tenant OPERATOR(pg_catalog.=) $1 AND r.id OPERATOR(pg_catalog.=) $2"

// A run as the statements address it.
struct Key {
    pg_uuid_t* tenant;
    pg_uuid_t* run_id;
};

// DU008 naming the run and the tenant.
[[noreturn]] void throw_not_found(const Key& key);

// submit: a new run, or the run already recorded under (workflow, idempotency key).
struct Submitted {
    pg_uuid_t* id;     // palloc'd
    bool same_inputs;  // a run found by its key carries the same inputs
};
// Inserts a run of `version` with its inputs and their digest (approved at once unless
// `status` is submitted); on a key already used, the existing run. `key` may be nullptr.
Submitted insert(Spi& spi, pg_uuid_t* tenant, text* workflow, int version, run::Status status, Jsonb* inputs,
                 text* key);

// The run's inputs digest (a text datum copied out); DU008 when absent.
Datum digest(Spi& spi, const Key& key);

// The run locked (FOR NO KEY UPDATE: inserts of stages and deliveries that reference it
// are not blocked) for approve, cancel and acquire_run. Strings are NUL-terminated and
// live in SPI memory until the next statement; nullptr for NULL.
struct Locked {
    run::Status status;
    const char* digest;
    const char* approved_by;
    const char* owner;
    bool lease_live;  // lease_until > now()
};
Locked lock(Spi& spi, const Key& key);  // DU008 when absent

void approve(Spi& spi, const Key& key, text* approver);
void cancel(Spi& spi, const Key& key, text* reason);
// Takes the lease for `owner` and returns the new generation.
std::int64_t acquire(Spi& spi, const Key& key, text* owner, Interval* lease);
// Takes the lease of one runnable run of the workflow (approved or running, lease free or
// expired, no retry deadline ahead), skipping runs others hold; appends (run_id,
// generation) to rsinfo when there was one.
void acquire_next(Spi& spi, pg_uuid_t* tenant, text* workflow, text* owner, Interval* lease, ReturnSetInfo* rsinfo);
// Extends the lease where the caller holds it (the generation and a live run); the new
// lease_until, or nullopt when the caller does not hold it.
std::optional<TimestampTz> renew(Spi& spi, const Key& key, std::int64_t generation, Interval* lease);
// Gives the lease up where the caller holds it (the generation moves on); false when not.
bool release(Spi& spi, const Key& key, std::int64_t generation);

// The run's status, generation and whether someone holds it; DU008 when absent.
struct State {
    run::Status status;
    std::int64_t generation;
    bool owned;
};
State state(Spi& spi, const Key& key);

// The whole row as a composite datum copied out; DU008 when absent.
Datum row(Spi& spi, const Key& key);
// Whether the run exists.
bool exists(Spi& spi, const Key& key);

// The run locked (NO KEY UPDATE) for a stage call of its owner, before anything else
// of the call is read; DU008 when absent, DU001 unless `generation` holds it.
struct Owned {
    run::Status status;
    text* workflow;  // copied out of SPI memory
    int version;
};
Owned lock_for_owner(Spi& spi, const Key& key, std::int64_t generation);

// transition_stage's writes: the run's inputs (jsonb, copied out), its move to running,
// its state, its end.
Datum inputs(Spi& spi, const Key& key);
void set_running(Spi& spi, const Key& key);
void set_state(Spi& spi, const Key& key, Jsonb* state);
// Ends the run with `status` and `reason` (a text datum; 0 for none).
void end(Spi& spi, const Key& key, run::Status status, Datum reason);

}  // namespace baton::pg::runs
