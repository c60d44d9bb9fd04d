// A scan floor (see scan_floor.hpp).
#include "core/scan_floor.hpp"

#include <algorithm>

namespace baton::scan_floor {

Micros begin(State& s, Micros now, Micros reported, bool* full) {
    *full = now >= s.next_full;
    if (*full) {
        s.next_full = now + kFullScanEvery;
        s.floor = kEverything;
        return kEverything;
    }
    return std::min(s.floor, reported);
}

void scanned(State& s, Micros oldest, Micros scan_now) { s.floor = std::min(oldest, scan_now - kSettle); }

void forget(State& s) {
    s.floor = kEverything;
    s.next_full = kEverything;
}

}  // namespace baton::scan_floor
