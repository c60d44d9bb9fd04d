// libFuzzer target: schedule specs (src/core/schedule.hpp), the text a caller passes as
// baton.schedule's `spec`, and the slot search over it.
//
// Input: a zone byte, eight bytes of the instant to search from, then the spec's bytes.
// Zone byte bits 0-2 pick UTC, +05:30, New York, Berlin, Lord Howe or Apia's skipped and
// repeated days; bit 7 clear puts the instant in 2011 to 2028 (where the zones change
// their clocks), set anywhere from year 1 to 9999.
//
// Properties: parse() returns a Spec or throws baton::Error 22023 `invalid value for
// argument "spec"` with a valid UTF-8 detail, never anything else. For a Spec, next_slot()
// ends and returns a slot strictly after the instant (none only within kSearchYears of
// year 9999), which is a slot of the spec: an @every multiple, or for a cron line the
// instant of a matching civil minute under the daylight-saving rule; there is no slot in
// between (latest_slot_at_or_before agrees, and when the slot is near, the minute-by-minute
// oracle too); latest_slot_at_or_before() is found likewise (none only near year 1).
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/schedule.hpp"
#include "fuzz_check.hpp"
#include "schedule_zones.hpp"

namespace {

using namespace baton::schedule;

constexpr std::int64_t kSecond = 1000000;
constexpr std::int64_t kDay = 86400 * kSecond;

// The zones, built once (a test may keep such statics; the core may not).
const Zone& zone_of(std::uint8_t k) {
    static const FixedZone utc0(0);
    static const FixedZone kolkata(19800);
    static const test::TableZone ny = test::new_york(1900, 2500);
    static const test::TableZone berlin = test::berlin(1900, 2500);
    static const test::TableZone lh = test::lord_howe(1900, 2500);
    static const test::TableZone apia = test::apia();
    static const test::TableZone twice = test::apia_reversed();
    switch (k % 7) {
        case 0:
            return utc0;
        case 1:
            return kolkata;
        case 2:
            return ny;
        case 3:
            return berlin;
        case 4:
            return lh;
        case 5:
            return apia;
        default:
            return twice;
    }
}

// True when `slot` is a slot of the cron spec: one of the instants of a matching civil
// minute under the rule of schedule.hpp (the gap's jump for a fixed-time spec).
bool is_cron_slot(const Spec& s, const Zone& zone, std::int64_t slot) {
    const Civil c = zone.civil_of(slot);
    if (matches(s, c)) {
        const Resolved r = zone.resolve(c);
        if (r.first == slot || (s.wildcard && r.kind == Resolved::Kind::kTwice && r.second == slot))
            return true;
    }
    if (s.wildcard)
        return false;
    // The jump of a gap: a matching minute between the last second before it and it.
    const std::int64_t before = usec_from_civil(zone.civil_of(slot - 1));
    const std::int64_t at = usec_from_civil(c);
    const std::int64_t minute = 60 * kSecond;
    const std::int64_t first = before - (before % minute + minute) % minute + minute;
    for (std::int64_t l = first; l < at && l - before <= kDay; l += minute) {
        const Civil g = civil_from_usec(l);
        if (!matches(s, g))
            continue;
        const Resolved r = zone.resolve(g);
        if (r.kind == Resolved::Kind::kGap && r.first == slot)
            return true;
    }
    return false;
}

// Checks a slot found from `after` (next) or at `now` (latest).
void check_slot(const Spec& s, const Zone& zone, std::int64_t slot) {
    FUZZ_CHECK(slot >= kMinUsec && slot <= kMaxUsec, "slot out of range");
    if (s.kind == Spec::Kind::kEvery)
        FUZZ_CHECK(slot % s.every_usec == 0, "@every slot not a multiple of the interval");
    else
        FUZZ_CHECK(is_cron_slot(s, zone, slot), "slot is not a slot of the spec");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 9)
        return 0;
    const std::uint8_t mode = data[0];
    std::uint64_t raw = 0;
    std::memcpy(&raw, data + 1, sizeof raw);
    const std::string_view text(reinterpret_cast<const char*>(data + 9), size - 9);

    Spec s;
    try {
        s = parse(text);
    } catch (const baton::Error& e) {
        fuzz::check_refusal(e, "22023", "invalid value for argument \"spec\"");
        FUZZ_CHECK(fuzz::utf8_valid(e.detail()), "refusal detail is not UTF-8");
        return 0;
    }
    FUZZ_CHECK(text.size() <= kMaxSpecBytes, "accepted a spec longer than the limit");

    const Zone& zone = zone_of(mode & 7);
    std::int64_t after;
    if (mode & 0x80) {
        const std::uint64_t width = static_cast<std::uint64_t>(kMaxUsec - kMinUsec);
        after = kMinUsec + static_cast<std::int64_t>(raw % width);
    } else {
        const std::int64_t from = test::utc(2011, 1, 1);
        const std::int64_t width = test::utc(2029, 1, 1) - from;
        // Mostly whole seconds, sometimes any microsecond.
        std::int64_t off = static_cast<std::int64_t>(raw % static_cast<std::uint64_t>(width));
        if (!(mode & 0x40))
            off -= off % kSecond;
        after = from + off;
    }

    const std::optional<std::int64_t> next = next_slot(s, zone, after);
    if (!next) {
        FUZZ_CHECK(after >= test::utc(9999 - kSearchYears, 1, 1),
                   "no next slot far from year 9999");
    } else {
        FUZZ_CHECK(*next > after, "next slot is not after");
        check_slot(s, zone, *next);
        const std::optional<std::int64_t> again = latest_slot_at_or_before(s, zone, *next);
        FUZZ_CHECK(again && *again == *next, "latest at a slot is not that slot");
        const std::optional<std::int64_t> before = latest_slot_at_or_before(s, zone, *next - 1);
        FUZZ_CHECK(!before || *before <= after, "a slot lies between after and the next slot");
        if (s.kind == Spec::Kind::kEvery)
            FUZZ_CHECK(*next - s.every_usec <= after, "an @every slot was skipped");
        else if (*next - after <= 2 * kDay) {
            const std::vector<std::int64_t> all = test::brute_slots(s, zone, after + 1, *next);
            FUZZ_CHECK(!all.empty() && all.front() == *next, "next slot differs from the oracle");
        }
    }

    const std::optional<std::int64_t> latest = latest_slot_at_or_before(s, zone, after);
    if (!latest) {
        FUZZ_CHECK(after < test::utc(1 + kSearchYears, 1, 1), "no latest slot far from year 1");
    } else {
        FUZZ_CHECK(*latest <= after, "latest slot is after now");
        check_slot(s, zone, *latest);
        const std::optional<std::int64_t> following = next_slot(s, zone, *latest);
        FUZZ_CHECK(!following || *following > after, "a slot lies between the latest and now");
        if (s.kind == Spec::Kind::kEvery)
            FUZZ_CHECK(*latest + s.every_usec > after, "an @every slot was skipped");
        else if (after - *latest <= 2 * kDay) {
            const std::vector<std::int64_t> all = test::brute_slots(s, zone, *latest, after);
            FUZZ_CHECK(!all.empty() && all.back() == *latest,
                       "latest slot differs from the oracle");
        }
    }
    return 0;
}
