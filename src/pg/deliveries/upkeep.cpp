// The side rows and claim hints of a delivery's writes (see upkeep.hpp).
#include <optional>
#include <string_view>

#include "core/delivery.hpp"
#include "core/event_count.hpp"
#include "core/key_limit.hpp"
#include "core/upkeep.hpp"
#include "pg/deliveries/claim_hints.hpp"
#include "pg/deliveries/event_counts.hpp"
#include "pg/deliveries/key_admission.hpp"
#include "pg/deliveries/upkeep.hpp"

namespace baton::pg::upkeep {

namespace {

std::string_view text_view(const text* t) { return {VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)}; }

std::string_view uuid_view(const pg_uuid_t* u) { return {reinterpret_cast<const char*>(u->data), UUID_LEN}; }

// A version's place in claim order, as the claim hints take it.
claim_hint::Position place(const Version& v) { return {v.core.priority, v.core.id}; }

}  // namespace

Version read(TupleTableSlot* slot, const Columns& c) {
    Version v{};
    bool isnull = false;
    Datum status = slot_getattr(slot, c.status, &isnull);
    if (!isnull) {
        std::optional<delivery::Status> s = delivery::parse_status(text_view(DatumGetTextPP(status)));
        v.core.has_status = s.has_value();
        if (s) v.core.status = *s;
    }
    bool n[8] = {};
    Datum tenant = slot_getattr(slot, c.tenant, &n[0]);
    Datum target = slot_getattr(slot, c.target, &n[1]);
    Datum priority = slot_getattr(slot, c.priority, &n[2]);
    Datum id = slot_getattr(slot, c.id, &n[3]);
    Datum run_after = slot_getattr(slot, c.run_after, &n[4]);
    Datum generation = slot_getattr(slot, c.generation, &n[5]);
    Datum lease_until = slot_getattr(slot, c.lease_until, &n[6]);
    v.core.has_place = !n[0] && !n[1] && !n[2] && !n[3] && !n[4];
    v.core.has_lease = !n[0] && !n[3] && !n[5] && !n[6];
    if (!n[0]) {
        v.tenant = DatumGetUUIDP(tenant);
        v.core.tenant = uuid_view(v.tenant);
    }
    if (!n[1]) {
        v.target = DatumGetTextPP(target);
        v.core.target = text_view(v.target);
    }
    if (!n[2]) v.priority = DatumGetInt32(priority);
    v.core.priority = v.priority;
    if (!n[3]) v.core.id = DatumGetInt64(id);
    if (!n[4]) v.core.run_after = DatumGetTimestampTz(run_after);
    if (!n[5]) v.core.generation = DatumGetInt64(generation);
    if (!n[6]) v.core.lease_until = DatumGetTimestampTz(lease_until);
    if (c.key > 0) {
        bool no_key = true;
        Datum key = slot_getattr(slot, c.key, &no_key);
        if (!no_key) {
            v.key = DatumGetTextPP(key);
            v.core.has_key = true;
            v.core.key = text_view(v.key);
        }
    }
    return v;
}

void close(Writers* w) {
    if (w->leases != nullptr) side_rows::close(w->leases);
    if (w->ready != nullptr) side_rows::close(w->ready);
    w->leases = nullptr;
    w->ready = nullptr;
}

namespace {

side_rows::Writer* opened(Writers* w, side_rows::Table table) {
    side_rows::Writer*& writer = table == side_rows::Table::kLeases ? w->leases : w->ready;
    if (writer == nullptr)
        writer = table == side_rows::Table::kReady && w->ready_open != nullptr
                     ? side_rows::adopt(w->ready_open, table)
                     : side_rows::open(w->deliveries, table);
    return writer;
}

}  // namespace

namespace {

// Where a version of a limited key stands: outside the key's count (not pending nor
// leased), admitted (in baton.ready, or leased), or waiting (in baton.key_waiting).
enum class Seat { kNone, kAdmitted, kWaiting };

// True when both versions carry the same key of the same tenant and target.
bool same_key(const Version* a, const Version* b) {
    return a != nullptr && b != nullptr && a->core.has_key && b->core.has_key && a->core.tenant == b->core.tenant &&
           a->core.target == b->core.target && a->core.key == b->core.key;
}

// The limit of a version's key; not limited without a key.
key_admission::Limit limit_of(const Version* v) {
    if (v == nullptr || !v->core.has_key || v->tenant == nullptr || v->target == nullptr) return {false, {}, false};
    return key_admission::find(v->tenant, v->target, v->key);
}

// A version as the limits of its key see it.
key_admission::Row row_of(const Version* v) {
    return {v->tenant, v->target, v->key, v->priority, v->core.id, v->core.run_after};
}

}  // namespace

// The claim hints first: a row taken is pending again should the transaction abort from
// the write on. Then baton.ready, the old place before the new, then baton.leases, the
// old lease before the new.
//
// A version of a limited key (key_admission.hpp) is admitted or waiting. A renewal keeps
// it where it is, and so do a claim, a retry and a reap but on a paced key, whose bucket
// a claim gives a token back and which admits a delivery given back afresh; a delivery
// that becomes pending otherwise waits, to be admitted at the commit; one that leaves
// the admitted frees its slot; a waiting one that moves in claim order waits at its new
// place.
namespace {

// The version's status, when it has one of the five.
std::optional<delivery::Status> status_of(const Version* v) {
    if (v == nullptr || !v->core.has_status) return std::nullopt;
    return v->core.status;
}

// Counts the write in the counters of the delivery's (tenant, target) as it is after it
// (as it was, for a delete).
void count(const Version* before, const Version* after) {
    const Version* at = after != nullptr ? after : before;
    if (at != nullptr) event_counts::wrote(at->tenant, at->target, status_of(before), status_of(after));
}

}  // namespace

void move(Writers* w, const Version* before, const Version* after, const ItemPointerData* before_ready,
          const ItemPointerData* after_tid) {
    baton::upkeep::Changes c =
        baton::upkeep::changes(before != nullptr ? &before->core : nullptr, after != nullptr ? &after->core : nullptr);
    bool was_leased = before != nullptr && baton::upkeep::leased(before->core);
    bool is_leased = after != nullptr && baton::upkeep::leased(after->core);
    bool kept = same_key(before, after);
    count(before, after);
    if (claim_hints::enabled() && c.leaves_ready)
        claim_hints::row_taken(before->tenant, VARDATA_ANY(before->target),
                               static_cast<int>(VARSIZE_ANY_EXHDR(before->target)), place(*before),
                               before->core.run_after);
    // A keyed pending version is in baton.ready or waits; a claim has read its ready row.
    Seat before_seat = was_leased ? Seat::kAdmitted : Seat::kNone;
    if (c.leaves_ready) {
        before_seat = Seat::kAdmitted;
        if (before->core.has_key && before_ready == nullptr && key_admission::unwait(before->tenant, before->core.id)) {
            before_seat = Seat::kWaiting;
        } else {
            side_rows::Writer* ready = opened(w, side_rows::Table::kReady);
            if (before_ready != nullptr)
                side_rows::remove_ready_at(ready, before_ready);
            else
                side_rows::remove_ready(ready, before->tenant, before->target, before->priority, before->core.id);
        }
    }
    bool renewal = kept && was_leased && is_leased;
    bool claim = kept && before_seat == Seat::kAdmitted && !was_leased && c.leaves_ready && is_leased;
    bool given_back = kept && was_leased && c.enters_ready;  // a retry or a reap
    bool keyed = (before != nullptr && before->core.has_key) || (after != nullptr && after->core.has_key);
    bool touches = c.leaves_ready || c.enters_ready || c.drops_lease || c.adds_lease;
    key_admission::Limit before_limit{false, {}, false}, after_limit{false, {}, false};
    if (keyed && touches && !renewal) {
        before_limit = limit_of(before);
        after_limit = kept ? before_limit : limit_of(after);
    }
    bool paced = before_limit.limited && before_limit.rule.rate > 0;
    // A paced key's admitted delivery that moves in the claim order other than by a claim
    // is admitted afresh: its place there carries its slot.
    bool repaced = paced && kept && before_seat == Seat::kAdmitted && !was_leased && c.enters_ready;
    bool entered = false;
    if (c.enters_ready) {
        bool enter = true;
        if (after_limit.limited) {
            key_admission::Row row = row_of(after);
            if (kept && before_seat == Seat::kWaiting) {
                key_admission::wait(row, after_limit);
                enter = false;
            } else if (given_back) {
                if (paced) {
                    key_admission::reenter(row, after_limit);
                    enter = false;
                }
            } else if (repaced || !(kept && before_seat == Seat::kAdmitted)) {
                key_admission::enter(row, after_limit);
                enter = false;
            }
        }
        entered = enter;
        if (enter) {
            if (claim_hints::enabled())
                claim_hints::row_pending(after->tenant, VARDATA_ANY(after->target),
                                         static_cast<int>(VARSIZE_ANY_EXHDR(after->target)), place(*after),
                                         after->core.run_after);
            side_rows::add_ready(opened(w, side_rows::Table::kReady), after->tenant, after->target, after->priority,
                                 after->core.id, after->core.run_after, after_tid);
        }
    }
    if (c.drops_lease)
        side_rows::remove_lease(opened(w, side_rows::Table::kLeases), before->tenant, before->core.id,
                                before->core.generation, before->core.lease_until);
    if (c.adds_lease)
        side_rows::add_lease(opened(w, side_rows::Table::kLeases), after->tenant, after->core.id,
                             after->core.generation, after->core.lease_until);
    if (claim && paced) key_admission::claimed(row_of(before), before_limit);
    if (renewal || claim || given_back) return;
    // A delivery leased without a claim (direct SQL, from waiting or from no seat) counts,
    // whatever the limit: a lease is never undone here.
    if (after_limit.limited && is_leased && !(kept && before_seat == Seat::kAdmitted))
        key_admission::leased(row_of(after), after_limit);
    bool admitted_after = is_leased || entered;
    if (before_limit.limited && before_seat == Seat::kAdmitted && !(kept && admitted_after && !repaced))
        key_admission::left(row_of(before), before_limit, !was_leased);
}

// Each row asked of core as an insert at status pending; those with a ready row go to
// baton.ready in one add_ready_all().
void inserted(Writers* w, const pg_uuid_t* tenant, const side_rows::ReadyRow* rows, int n) {
    side_rows::ReadyRow* ready = static_cast<side_rows::ReadyRow*>(palloc(sizeof(side_rows::ReadyRow) * (n + 1)));
    int k = 0;
    bool hints = claim_hints::enabled();
    for (int i = 0; i < n; i++) {
        const side_rows::ReadyRow& r = rows[i];
        event_counts::enqueued(tenant, r.target, 1);
        baton::upkeep::Version v{true,  delivery::Status::kPending, true, uuid_view(tenant), text_view(r.target),
                                 r.priority, r.id, r.run_after, false, 0, 0, false, {}};
        if (!baton::upkeep::changes(nullptr, &v).enters_ready) continue;
        if (hints)
            claim_hints::row_pending(tenant, VARDATA_ANY(r.target), static_cast<int>(VARSIZE_ANY_EXHDR(r.target)),
                                     {r.priority, r.id}, r.run_after);
        ready[k++] = r;
    }
    if (k > 0) side_rows::add_ready_all(opened(w, side_rows::Table::kReady), tenant, ready, k);
    pfree(ready);
}

}  // namespace baton::pg::upkeep
