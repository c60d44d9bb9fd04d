// The reaper's launcher: with shared_preload_libraries = 'pg_baton', one background
// worker per cluster, connected to no database (it reads only the shared catalog
// pg_database), starts one dynamic reaper worker per database that is served:
//
//   - baton.reaper_databases = '*' (the default): every database in which pg_baton is
//     installed. The launcher starts a worker once for each database it has not seen
//     yet (at its own start, and for each database created later); a worker that finds
//     no pg_baton says so in shared memory and exits, and its database costs nothing
//     more until a CREATE EXTENSION there commits (this module's utility hook announces
//     it, and the launcher starts the worker at once). A CREATE EXTENSION prepared for
//     two-phase commit (PREPARE TRANSACTION, as Citus does on its workers) leaves its
//     xid in shared memory instead, and so does a worker that finds pg_baton being
//     installed by a transaction not yet ended (a prepared one the server restarted
//     with); the launcher announces the database once that transaction has ended.
//   - a list of names: the databases named that exist; a worker whose database has no
//     pg_baton stays and waits for it (as before the launcher).
//
// DROP DATABASE, ALTER DATABASE ... RENAME / SET TABLESPACE and CREATE DATABASE ...
// TEMPLATE need the database free of connections: the utility hook pauses the
// database's reaper (its worker is asked to exit, and none starts) until the command's
// transaction ends. Shared memory holds, per database, the worker's pid, the pause and
// the announcements; the launcher's own bookkeeping stays in its process.
#pragma once

#include <cstdint>

#include "pg/runtime/postgres.hpp"

namespace baton::pg::launcher {

// Reserves the shared memory, registers the launcher worker and installs the utility
// hook and the transaction callback (from _PG_init, only while preloading).
void init();

// Called by a reaper worker once connected: records it as its database's worker and
// returns the announcement count it starts from, or false when the database is paused
// or already has a worker (the caller exits at once).
bool attach(uint32_t* announced);

// Called by a reaper worker that stays: it found pg_baton in its database, or its
// database is listed by name (it waits there). Until then the launcher counts it as a
// check that will soon free its worker slot.
void report_serving();

// Called by a reaper worker (baton.reaper_databases = '*') that found no pg_baton in its
// database: the launcher forgets the database until an announcement newer than
// `announced` (attach's) arrives. `installing`, when valid, is the transaction that is
// installing pg_baton there and has not ended (reaper.cpp reads it from pg_extension):
// its end is such an announcement.
void report_absent(uint32_t announced, TransactionId installing);

// Called by a reaper worker after each batch it ran (reaping or not): the time, for
// baton.health's reaper row.
void report_reaped();

// For baton.health: false when the shared memory does not exist (pg_baton is not
// preloaded); else true, with *at the time the reaper of `db` last ran a batch (0 when
// none has since the server started, or since the database's slot was last freed).
bool last_reaped(Oid db, TimestampTz* at);

// A lease row of this database written with an expiry already past or near
// (scan_floor::is_early(), or DT_NOBEGIN for rows written in bulk): its reaper's
// batches look down to it until their next full scan (core/scan_floor.hpp). Nothing
// when pg_baton is not preloaded (no reaper runs).
void report_early_lease(TimestampTz lease_until);

// For the reaper of this database: the earliest expiry reported since the reports were
// last forgotten (DT_NOEND when none; DT_NOBEGIN when the database has no slot), and
// `forget` forgets them, before a full scan.
TimestampTz early_leases(bool forget);

// For baton.purge in this database: the creation time from which it reads
// baton.deliveries (core/scan_floor.hpp: a delivery behind the floor that becomes
// purgeable waits for the next full scan, at most kFullScanEvery).
// DT_NOBEGIN for a full scan, and always when pg_baton is not preloaded or the database
// has no slot in its shared memory yet.
TimestampTz purge_scan_from(TimestampTz now);

// After that read: the floor it leaves (the creation of the oldest purgeable delivery it
// found, or its cutoff), as of `now`, the clock it began with.
void purge_scanned(TimestampTz floor, TimestampTz now);

// A delivery of this database written with a creation time that may be behind purge's
// floor (DT_NOBEGIN: a tenant's rows purge passed by while it was not active): purge's
// next call reads down to it.
void report_purge_floor(TimestampTz created_at);

}  // namespace baton::pg::launcher
