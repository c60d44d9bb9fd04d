// How a restore gets past the fence. pg_dump writes the rows of pg_baton's tables as one
// `COPY baton.<table> FROM stdin` each, in an order of its own (a fenced tenant's rows may
// come before its tenant row, or after it), and pg_restore and psql replay them. The
// fence lets those rows in, and only those: the statement must be the session's top-level
// COPY into that very table, run by a role with the privileges of the table's owner, who
// could disable the fence's triggers anyway. Every other write of every other role and
// every write made from inside a function (SPI, triggers, pg_baton's own calls) is fenced.
#pragma once

#include "pg/postgres.hpp"

namespace baton::pg::restore_load {

// True when the row being written to rel comes from a top-level `COPY rel FROM` run by a
// role that has the privileges of rel's owner.
bool active(Relation rel);

}  // namespace baton::pg::restore_load
