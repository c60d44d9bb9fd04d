// jsonb and the core's JSON tree: jsonb walked into json::Value with Postgres' own
// iterator, and built back from it with Postgres' own builder. No JSON text is printed or
// parsed on the way, except to word a refusal.
//
// The core reads UTF-8. In a UTF8 database a jsonb string is UTF-8 already; in any other
// database the whole value is first checked to read as UTF-8 (the conversion of its text,
// in a subtransaction, whose failure is 22023 "invalid JSON text"), and each string is
// converted on the way in and back to the server encoding on the way out.
#pragma once

#include "core/json.hpp"
// (core headers before Postgres headers)
#include "pg/runtime/boundary.hpp"

namespace baton::pg {

// A jsonb value as the core's tree. Throws 22023 "invalid JSON text" when it nests deeper
// than json::kMaxDepth (json::too_deep, the offset in its text as jsonb prints it) or, in
// a database that is not UTF8, when its text cannot be read as UTF-8.
json::Value jsonb_value(const Jsonb* jb);

// The jsonb of a tree the core holds or built (palloc'd in the current memory context).
Jsonb* jsonb_of(const json::Value& value);

// Refuses (22023 "invalid JSON text", "It is not valid UTF-8: ...") a jsonb value whose
// text cannot be converted from the server encoding to UTF-8: bytes that are not UTF-8,
// which only a SQL_ASCII database stores. Nothing to do, and no subtransaction, in a UTF8
// database.
void require_json_utf8(const Jsonb* jb);

// The same naming an argument (22023 "invalid value for argument ..."): pg_baton reads
// definitions, inputs and results as UTF-8 and takes digests over it.
void check_json_utf8(const char* name, const Jsonb* jb);

}  // namespace baton::pg
