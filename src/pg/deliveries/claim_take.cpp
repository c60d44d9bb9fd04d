// One tenant's claim of a target (see claim_take.hpp).
#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "pg/deliveries/claim_take.hpp"
#include "pg/deliveries/claim_hints.hpp"
#include "pg/runtime/relations.hpp"

namespace baton::pg {

std::int64_t claim_take(DeliveryStore& store, ClaimCall& call, const char* target, int target_len,
                        std::int64_t max_items, bool use_hint) {
    Oid relation = use_hint ? guard([] { return relations::opened("deliveries"); }) : InvalidOid;
    claim_hints::Scan scan = claim_hints::begin(call.tenant, target, target_len, use_hint, relation);
    claim_hints::look_at_prepared(scan);
    call.now = scan.now;
    std::int64_t got = 0;
    claim_hint::Position start = scan.ticket.start;
    bool hinted = scan.entry != nullptr && start.priority <= PG_INT32_MAX && start.priority >= PG_INT32_MIN;
    if (hinted) {
        // The rest of the hint's priority level, then the levels below it.
        Claimed level = store.claim(call, ClaimRange::kLevel, start, max_items);
        got = level.n;
        claim_hint::Position last = level.last;
        if (got < max_items) {
            Claimed below = store.claim(call, ClaimRange::kBelow, start, max_items - got);
            got += below.n;
            if (below.n > 0) last = below.last;
        }
        claim_hints::raise(scan, got < max_items ? claim_hint::kEnd : last);
    }
    if (got < max_items && (!hinted || claim_hints::may_scan_from_top(scan))) {
        // From the top: without a hint, or behind it (a row the hint cannot see, or one
        // put back while this claim ran, which only a later claim would otherwise see).
        Claimed top = store.claim(call, ClaimRange::kAll, claim_hint::kTop, max_items - got);
        if (!hinted && scan.entry != nullptr) {
            scan.ticket.start = claim_hint::kTop;
            claim_hints::raise(scan, top.n < max_items - got ? claim_hint::kEnd : top.last);
        }
        got += top.n;
    }
    return got;
}

}  // namespace baton::pg
