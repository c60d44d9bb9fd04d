// Whose rights pg_baton's code acts with: the extension's owner.
//
// pg_baton is a trusted extension. Whoever creates it (a superuser, or a database owner
// with CREATE on the database) is its owner (pg_extension.extowner); its tables belong to
// the role that ran the install script (the bootstrap superuser when a non-superuser
// installs it), and the script grants the owner exactly what the functions use. Every
// entry point, the restore check and the background reaper switch to this role before
// they run a statement: nothing pg_baton runs has more rights than the role that
// installed it, so installing it gives a non-superuser nothing it did not have.
#pragma once

#include "pg/runtime/postgres.hpp"

namespace baton::pg::owner {

// The owner of extension pg_baton in this database; when it is not installed, ERROR
// (42704), or InvalidOid if missing_ok. Cached per backend and forgotten on every relcache or schema invalidation
// (DROP EXTENSION drops its tables; REASSIGN OWNED changes the schema's owner with the
// extension's), so a new owner counts from the next call. Postgres calls only: wrap in
// guard() from C++ that holds destructors.
Oid of_extension(bool missing_ok = false);

// Whether this transaction (or a subtransaction of it) created, updated or changed the
// owner of pg_baton (wrote its pg_extension row). Postgres calls only: wrap in guard().
bool changed_in_this_transaction();

}  // namespace baton::pg::owner
