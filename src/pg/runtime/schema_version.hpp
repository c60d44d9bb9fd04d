// The schema a call finds against the library that serves it. One pg_baton.so serves
// every database of a server, and each database keeps the schema of the version it was
// created or last updated at (pg_extension.extversion) until ALTER EXTENSION pg_baton
// UPDATE runs there. The library's statements are written for the schema of its own
// version (pg_baton.control's default_version when it was built): on an older schema
// every call is refused, until the update (docs/guide/versions.md).
//
// Every SQL-callable function and trigger is refused first when older_installed() says so
// (pg/runtime/boundary's run(), 55000 naming both versions, with the hint ALTER
// EXTENSION pg_baton UPDATE), and the background reaper asks older_installed() before
// each batch.
#pragma once

#include "pg/runtime/postgres.hpp"

namespace baton::pg::schema_version {

// The version the library was built for.
const char* library();

// True once older_installed() found this database's pg_baton at the library's version
// or later, until the next relcache or schema invalidation (DROP EXTENSION drops its
// tables, whose invalidations reach every backend; a CREATE EXTENSION of an older
// version follows it): a call then costs a flag test. Nothing else is kept.
bool current();

// The installed version when it is older than the library's (palloc'd); nullptr when it
// is at the library's version or later, when it is not installed (the caller says so
// itself), or while its own CREATE EXTENSION or ALTER EXTENSION UPDATE runs (the scripts
// call pg_baton's functions, and their writes pass its triggers, on the schema they are
// building). Postgres calls only (wrap in guard() from C++ that holds destructors).
const char* older_installed();

}  // namespace baton::pg::schema_version
