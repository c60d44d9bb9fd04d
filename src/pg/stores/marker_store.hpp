// The one way the entry points read and write baton.step_entries and baton.markers:
// every statement on the two tables is here (with the advisory lock that numbers
// entries), and each answer comes back as a plain struct. When a marker may be claimed,
// completed or resolved is src/core/marker.hpp's.
#pragma once

#include <cstdint>
#include <optional>

#include "core/marker.hpp"
// (core headers before Postgres headers)
#include "pg/runtime/spi.hpp"

namespace baton::pg::markers {

// A marker as every marker call names it.
struct Key {
    pg_uuid_t* tenant;
    std::int64_t entry_id;
    std::int32_t position;
};

// enter_step: takes the lock that orders the entries of (tenant, subject, step), then
// inserts the next entry (numbered from 1 past every committed one) and appends
// (entry_id, entry_seq) to rsinfo.
void enter(Spi& spi, pg_uuid_t* tenant, text* subject, text* step, text* digest, ReturnSetInfo* rsinfo);

// The entry a marker belongs to: a stage (with its run and the run's generation) or a
// step entry (no run).
struct Entry {
    bool has_run;
    Datum run_id;  // uuid, copied out, when has_run
    std::int64_t generation;
};
// nullopt when entry_id is neither a stage nor a step entry of the tenant.
std::optional<Entry> entry(Spi& spi, pg_uuid_t* tenant, std::int64_t entry_id);

// From absent (or `retry`) to in_progress under the entry's run and generation; false
// when the marker exists in another state (the caller must not run the action).
bool claim(Spi& spi, const Key& key, text* kind, text* operation_id, const Entry& entry);
// in_progress to `to` (done or failed); false, writing nothing, when the marker is
// absent or not in progress. `error` may be nullptr.
bool complete(Spi& spi, const Key& key, marker::State to, text* error);
// baton.marker's row appended to rsinfo, when the marker exists.
void emit(Spi& spi, const Key& key, ReturnSetInfo* rsinfo);
// The run's markers in doubt (in progress, claimed under a generation older than
// `run_generation`) appended to rsinfo in (entry_id, position) order.
void emit_in_doubt(Spi& spi, pg_uuid_t* tenant, pg_uuid_t* run_id, std::int64_t run_generation,
                   ReturnSetInfo* rsinfo);

// The marker and its run, both locked, for resolve_marker. `run_id` is text in SPI memory.
struct Locked {
    marker::State state;
    std::int64_t generation;      // the marker's
    std::int64_t run_generation;  // the run's
    bool run_owned;
    const char* run_id;
};
// nullopt when there is no marker of a run at that key (see exists()); XX000 for a
// state the core does not know.
std::optional<Locked> lock_for_resolve(Spi& spi, const Key& key);
// Whether the marker exists at all (of a run or of a step entry).
bool exists(Spi& spi, const Key& key);
// Records the resolution under the owner's generation.
void resolve(Spi& spi, const Key& key, marker::State to, std::int64_t generation);

}  // namespace baton::pg::markers
