// The operator's calls on deliveries: cancel_delivery (producers and admins) and
// redrive (admins). Each checks its arguments and the fence, then lets the core decide
// (delivery::cancel_verdict, delivery::redrivable) and the store write.
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/tenant.hpp"
#include "pg/runtime/args.hpp"
#include "pg/runtime/arrays.hpp"
#include "pg/runtime/notify.hpp"
#include "pg/deliveries/delivery_store.hpp"
#include "pg/access/fence.hpp"
#include "pg/access/read_only.hpp"

namespace baton::api {

namespace {

// What cancel_delivery answers: 'cancelled', or throws DU007 / DU008. The write checks
// the generation it decided on (DeliveryStore::cancel); when the row changed under it
// (on Citus, a claim on the other placement of a shard being moved), it reads and
// decides again.
void cancel_one(pg_uuid_t* tenant, std::int64_t id, text* reason) {
    pg::DeliveryStore store;
    for (int tries = 0; tries < 3; tries++) {
        pg::FoundDelivery f = store.lock(tenant, id);
        if (!f.found)
            throw Error(SqlState::kNotFound,
                        "delivery " + std::to_string(id) + " does not exist in tenant " + pg::uuid_text(tenant),
                        "Deliveries are addressed by (tenant, id).");
        switch (delivery::cancel_verdict(f.row.status)) {
            case delivery::CancelVerdict::kApply:
                if (store.cancel(tenant, id, delivery::cancelled(f.row).generation, reason)) return;
                continue;
            case delivery::CancelVerdict::kAlready: return;
            case delivery::CancelVerdict::kSettled:
                throw Error(SqlState::kInvalidState,
                            "delivery " + std::to_string(id) + " is already " + delivery::status_name(f.row.status),
                            "Only a pending or claimed delivery can be cancelled.",
                            "A finished or failed delivery stays as it settled; baton.redrive sends failed ones back.");
        }
    }
    throw Error(SqlState::kSerializationFailure, "delivery " + std::to_string(id) + " of tenant " + pg::uuid_text(tenant) +
                                         " changed under cancel_delivery three times in a row",
                "Each time the row was read, another writer changed its generation before the cancel's write.",
                "Call baton.cancel_delivery again.");
}

// baton.cancel_delivery(tenant, id, reason): a pending or claimed delivery becomes
// cancelled under generation + 1 (its holder, if any, is fenced: DU001), settled now,
// with the reason in last_error. Returns 'cancelled', also for a repeat.
Datum cancel_delivery(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.cancel_delivery");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    std::int64_t id = pg::int64_arg(fcinfo, 1, "id");
    text* reason = pg::optional_text_arg(fcinfo, 2);
    if (reason != nullptr) delivery::check_reason_bytes(VARSIZE_ANY_EXHDR(reason));
    pg::fence::require_writable(tenant);
    cancel_one(tenant, id, reason);
    return pg::text_datum(delivery::status_name(delivery::Status::kCancelled));
}

// The NOTICE of a redrive by ids that skipped some: how many, and why each (the first
// kMaxReasons of them) in its detail.
void tell_skipped(const std::vector<pg::DeliveryStore::Skipped>& skipped, int named, std::string_view target) {
    constexpr std::size_t kMaxReasons = 50;
    std::string detail;
    for (std::size_t i = 0; i < skipped.size() && i < kMaxReasons; i++) {
        const auto& s = skipped[i];
        if (i > 0) detail += '\n';
        detail += delivery::redrive_skip_reason(s.id, target, s.exists, s.target, s.status);
    }
    if (skipped.size() > kMaxReasons) detail += "\nAnd " + std::to_string(skipped.size() - kMaxReasons) + " more.";
    std::string message =
        "redrive skipped " + std::to_string(skipped.size()) + " of the " + std::to_string(named) + " deliveries named";
    pg::guard([&] {
        ereport(NOTICE, (errmsg_internal("%s", message.c_str()), errdetail_internal("%s", detail.c_str()),
                         errhint("baton.delivery(tenant, id) shows a delivery as it is.")));
    });
}

// baton.redrive(tenant, target, ids, max_rows): the failed and cancelled deliveries of
// the target (oldest settled first, at most max_rows; or exactly those of ids, others
// skipped) become pending and due now, with attempts 0; last_error and the generation
// stay. Returns how many moved; a NOTICE says why each id it skipped was skipped, and the
// target's listeners are woken.
Datum redrive(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.redrive");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    text* target = pg::text_arg(fcinfo, 1, "target");
    std::int32_t max_rows = pg::int32_arg(fcinfo, 3, "max_rows");
    delivery::check_target_chars(pg::text_chars(target));
    delivery::check_redrive_rows(max_rows);
    pg::Int64Array ids{0, nullptr, 0};
    bool by_ids = !PG_ARGISNULL(2);
    if (by_ids) {
        ids = pg::int64_array_arg(fcinfo, 2, "ids");
        if (ids.n < 1 || ids.n > limits::kMaxFinishBatch)
            throw_invalid_argument("ids", "ids has 1 to " + std::to_string(limits::kMaxFinishBatch) +
                                              " items, not " + std::to_string(ids.n) + ".");
        std::unordered_set<std::int64_t> seen;
        for (int i = 0; i < ids.n; i++)
            if (!seen.insert(DatumGetInt64(ids.values[i])).second)
                throw_invalid_argument("ids", "Each id appears once; " +
                                                  std::to_string(DatumGetInt64(ids.values[i])) + " appears twice.");
    }
    pg::fence::require_writable(tenant);
    pg::DeliveryStore store;
    std::vector<std::int64_t> skipped;
    std::int64_t moved = store.redrive(tenant, target, by_ids ? &ids : nullptr, max_rows, &skipped);
    if (!skipped.empty()) tell_skipped(store.describe_skipped(tenant, skipped), ids.n, pg::text_view(target));
    store.close();
    // Workers listening on the target hear of the deliveries now claimable, as after an
    // enqueue.
    if (moved > 0) pg::notify::enqueued(tenant, target);
    PG_RETURN_INT64(moved);
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_cancel_delivery, baton::api::cancel_delivery)
BATON_FUNCTION(baton_redrive, baton::api::redrive)
