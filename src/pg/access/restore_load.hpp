// How a restore gets past the fence, and only a restore.
//
// pg_dump writes the rows of pg_baton's tables as one `COPY baton.<table> FROM stdin`
// each, in an order of its own (a fenced tenant's rows may come before its tenant row,
// or after it; pg_restore -j loads tables side by side), and pg_restore and psql replay
// them. The fence lets such a row in when three things hold:
//   - the statement is the session's top-level COPY into that very table (not a write
//     made from inside a function, a trigger or SPI, and never one of pg_baton's calls);
//   - the role has the privileges of the extension's owner (pg/runtime/owner.hpp: the role that
//     installed pg_baton, a superuser or the database owner, whose rights its own
//     calls use), as the role that restores a dump (and ran its CREATE EXTENSION) has;
//   - this database's pg_baton has not been written to yet: baton.in_use holds no row.
//     CREATE EXTENSION leaves it empty and pg_dump does not dump it, so a restored
//     database is in this state until its first write; the first write through the
//     fence (any pg_baton call that writes, any INSERT, UPDATE or DELETE on its tables)
//     adds the row, and from then on every write of every role is fenced.
#pragma once

#include "pg/runtime/postgres.hpp"

namespace baton::pg::restore_load {

// True when the row being written to rel is loaded by a restore (the three conditions).
bool active(Relation rel);

// Marks this database's pg_baton as in use (a row in baton.in_use), once: called by the
// fence for every write it lets through. A no-op after the first call in a backend.
void mark_in_use();

}  // namespace baton::pg::restore_load
