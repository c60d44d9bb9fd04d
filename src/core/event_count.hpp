// Which of a delivery's monotonic counters a write of it counts: enqueued, claimed,
// finished, failed, retried, cancelled, reaped and redriven, per tenant and target
// (pg/deliveries/event_counts.hpp keeps them). Told the status before and after the write
// (none: an insert's before, a delete's after) and whether a reap made it.
#pragma once

#ifdef POSTGRES_H
#error "core headers are included before postgres.hpp"
#endif

#include <optional>

#include "core/delivery.hpp"

namespace baton::event_count {

enum class Event { kEnqueued, kClaimed, kFinished, kFailed, kRetried, kCancelled, kReaped, kRedriven };
constexpr int kEvents = 8;

// The column of baton.event_counts (and the metric's label) of each event.
const char* name(Event event);

// What one write counts: none, one event, or two (a reap that spends a delivery's last
// attempt is reaped and failed).
struct Counted {
    int n;
    Event events[2];
};

// The events of a write from `before` to `after`:
//   an insert                          enqueued
//   to claimed from any other status   claimed (a renewal, claimed to claimed: nothing)
//   to finished                        finished
//   to failed                          failed, and reaped too when a reap took the lease
//   to cancelled                       cancelled
//   claimed to pending                 reaped by a reap, else retried
//   failed, cancelled or finished      redriven
//     to pending
//   a delete, or the status unchanged  nothing
Counted of(std::optional<delivery::Status> before, std::optional<delivery::Status> after, bool reaping);

}  // namespace baton::event_count
