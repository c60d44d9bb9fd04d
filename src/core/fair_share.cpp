// The fair claim's turns (see fair_share.hpp).
#include "core/fair_share.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"

namespace baton::fair_share {

void check_weight(std::int64_t weight) {
    if (weight < kMinWeight || weight > kMaxWeight)
        throw_invalid_argument("weight", "A weight is between " + std::to_string(kMinWeight) + " and " +
                                             std::to_string(kMaxWeight) + ", not " + std::to_string(weight) + ".");
}

void open(Turn& turn) {
    turn.open = true;
    turn.served = 0;
}

std::int64_t quota(const Turn& turn, std::int32_t weight, std::int64_t wanted, bool alone) {
    if (alone) return wanted;
    std::int64_t left = std::max<std::int64_t>(1, static_cast<std::int64_t>(weight) - turn.served);
    return std::min(left, wanted);
}

void took(Turn& turn, std::int32_t weight, std::int64_t asked, std::int64_t got) {
    turn.served += got;
    if (got < asked || turn.served >= weight) turn.open = false;
}

void pass(Turn& turn) { turn.open = false; }

}  // namespace baton::fair_share
