// wakeup_channel: the name of the channel a worker LISTENs on to wake up when a delivery
// is enqueued for its tenant and target (docs/guide/wakeups.md).
#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "core/error.hpp"
#include "pg/runtime/args.hpp"
#include "pg/access/auth.hpp"
#include "pg/deliveries/delivery_store.hpp"
#include "pg/runtime/notify.hpp"

namespace baton::api {

namespace {

// baton.wakeup_channel(tenant, target): the channel's name, given to whoever may claim
// the target's deliveries (EXECUTE, and membership of the target's bound role: DU005),
// so that the name itself is the secret a listener needs. It writes nothing, so a fenced
// tenant's workers may still ask for it and wait for the fence to lift.
Datum wakeup_channel(FunctionCallInfo fcinfo, Oid caller) {
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    text* target = pg::text_arg(fcinfo, 1, "target");
    delivery::check_target_chars(pg::text_chars(target));
    {
        // The store's SPI connection (a distributed install reads the binding by a
        // statement) ends here, before the name is allocated: memory allocated while it
        // is open belongs to it and is gone when it finishes.
        pg::DeliveryStore store;
        pg::auth::require_member(
            caller, store.bound_role(tenant, VARDATA_ANY(target), static_cast<int>(VARSIZE_ANY_EXHDR(target))),
            pg::text_view(target));
        store.close();
    }
    char name[pg::notify::kChannelBytes];
    pg::notify::channel(tenant, target, name);
    return pg::text_datum(name);
}

// baton.new_wakeup_secret(): 32 bytes from the server's strong random source, the
// default of baton.wakeup_key.secret (so the install script holds no logic).
Datum new_wakeup_secret(FunctionCallInfo, Oid) {
    constexpr int kBytes = 32;
    return pg::guard([] {
        bytea* secret = static_cast<bytea*>(palloc(VARHDRSZ + kBytes));
        SET_VARSIZE(secret, VARHDRSZ + kBytes);
        if (!pg_strong_random(VARDATA(secret), kBytes))
            ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("could not generate a random wake-up secret")));
        return PointerGetDatum(secret);
    });
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_wakeup_channel, baton::api::wakeup_channel)
BATON_FUNCTION(baton_new_wakeup_secret, baton::api::new_wakeup_secret)
