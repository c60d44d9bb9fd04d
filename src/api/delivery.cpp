// delivery: one delivery's row, for any tenant state.
#include <string>

#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "core/error.hpp"
#include "pg/runtime/args.hpp"
#include "pg/deliveries/delivery_store.hpp"

namespace baton::api {

namespace {

// baton.delivery(tenant, id): the delivery's row, for any tenant state; DU008 if absent.
Datum get_delivery(FunctionCallInfo fcinfo, Oid) {
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    std::int64_t id = pg::int64_arg(fcinfo, 1, "id");
    pg::DeliveryStore store;
    std::optional<Datum> row = store.row(tenant, id);
    if (!row)
        throw Error(SqlState::kNotFound,
                    "delivery " + std::to_string(id) + " does not exist in tenant " + pg::uuid_text(tenant),
                    "Deliveries are addressed by (tenant, id).");
    return *row;
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_delivery, baton::api::get_delivery)
