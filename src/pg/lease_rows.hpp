// The rows of baton.leases: the expiry of every lease a delivery takes, kept apart from
// the delivery so that baton.deliveries needs no index on lease_until
// (docs/architecture.md, "Where a lease's expiry is kept").
//
// A row (tenant, id, generation, lease_until) is added whenever a delivery row is
// written claimed with a lease it did not hold before: a claim (a new generation), a
// renew (a new lease_until), a row claimed by direct SQL or loaded by a restore. The
// fence trigger adds it for every write that passes it; the direct claim, which passes
// no trigger, adds it itself. Nothing else writes the table but reap, which reads it in
// order of expiry and deletes the rows that expired: a row is live while its delivery is
// claimed at that generation with that lease_until, and stale after (finished,
// retried, renewed, reaped, removed): stale rows cost nothing until they expire.
//
// On Citus the delivery written is a row of a shard (deliveries_102008) on the node
// that holds it, and its lease goes to the shard of baton.leases colocated with it, on
// the same node, in the same transaction.
#pragma once

#include <cstdint>

#include "pg/postgres.hpp"

namespace baton::pg::lease_rows {

// baton.leases (or its shard) opened for a call's inserts.
struct Writer;

// True when this database's pg_baton keeps baton.leases (0.9.0 on). Before that, the
// schema's partial index deliveries_leases is what reap reads, and no row is written
// (one pg_baton.so serves a schema not yet updated). Postgres calls only.
bool kept();

// Opens the leases relation that goes with `deliveries` (baton.deliveries, or on Citus
// one of its shards); nullptr when the schema has no baton.leases (kept()). Postgres
// calls only (call it inside guard()).
Writer* open(Relation deliveries);
// Adds one lease row. Postgres calls only.
void add(Writer* w, const pg_uuid_t* tenant, std::int64_t id, std::int64_t generation, TimestampTz lease_until);
// Closes the relation (its lock is kept to the end of the transaction). Postgres calls only.
void close(Writer* w);

// Adds the leases the deliveries hold and baton.leases lacks: the claimed rows of
// baton.deliveries with a lease_until and no row of that lease. What an update to 0.9.0
// writes, on one node from its script and on Citus from distribute(), once the table is
// distributed (a distributed INSERT ... SELECT, each shard group on its node).
// Idempotent. Postgres calls only, inside an SPI connection.
void fill();

// Forgets the shards found for relation relid (InvalidOid: all): from pg/invalidation's
// relcache callback, as a shard moved by Citus is a new relation.
void forget(Oid relid);

}  // namespace baton::pg::lease_rows
