// The items of enqueue_batch: a jsonb array of objects, each read in place with
// Postgres' own jsonb accessors into the NewDelivery the delivery store adds. Every
// refusal is 22023 naming the argument `items`; the limits on each item's values are
// checked by the caller, as for enqueue's arguments.
#pragma once

#include "pg/deliveries/delivery_store.hpp"

namespace baton::pg {

// The number of items; 22023 when `items` is not a JSON array.
int batch_length(const Jsonb* items);
// Item i: an object with target and dedup_key (strings) and optionally payload and
// binding (JSON), run_after (a timestamptz as a string), priority and max_attempts
// (int4 numbers) and run_id (a uuid as a string). 22023 for an unknown key or a value of
// the wrong kind.
NewDelivery batch_item(const Jsonb* items, int i);

}  // namespace baton::pg
