// Which counters a delivery's write counts (see event_count.hpp).
#include "core/event_count.hpp"

namespace baton::event_count {

const char* name(Event event) {
    switch (event) {
        case Event::kEnqueued: return "enqueued";
        case Event::kClaimed: return "claimed";
        case Event::kFinished: return "finished";
        case Event::kFailed: return "failed";
        case Event::kRetried: return "retried";
        case Event::kCancelled: return "cancelled";
        case Event::kReaped: return "reaped";
        case Event::kRedriven: return "redriven";
    }
    return "unknown";
}

Counted of(std::optional<delivery::Status> before, std::optional<delivery::Status> after, bool reaping) {
    using delivery::Status;
    Counted c{0, {Event::kEnqueued, Event::kEnqueued}};
    auto add = [&c](Event e) { c.events[c.n++] = e; };
    if (!after) return c;
    if (!before) {
        add(Event::kEnqueued);
        return c;
    }
    if (*before == *after) return c;
    switch (*after) {
        case Status::kClaimed: add(Event::kClaimed); break;
        case Status::kFinished: add(Event::kFinished); break;
        case Status::kFailed:
            add(Event::kFailed);
            if (reaping && *before == Status::kClaimed) add(Event::kReaped);
            break;
        case Status::kCancelled: add(Event::kCancelled); break;
        case Status::kPending:
            if (*before == Status::kClaimed)
                add(reaping ? Event::kReaped : Event::kRetried);
            else
                add(Event::kRedriven);
            break;
    }
    return c;
}

}  // namespace baton::event_count
