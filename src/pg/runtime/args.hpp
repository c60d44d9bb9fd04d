// Reading SQL arguments and jsonb values into plain C++ values at the boundary.
// Required arguments that are NULL throw 22004 naming the argument, raised at the
// caller's place; detoasting is guarded, so a Postgres error here unwinds as PgError.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/cause.hpp"
#include "core/error.hpp"
#include "pg/runtime/boundary.hpp"

namespace baton::pg {

// Throws 22004 when argument n is NULL.
void require(FunctionCallInfo fcinfo, int n, const char* name, Where where = Where::here());

pg_uuid_t* uuid_arg(FunctionCallInfo fcinfo, int n, const char* name, Where where = Where::here());
std::int32_t int32_arg(FunctionCallInfo fcinfo, int n, const char* name, Where where = Where::here());
std::int64_t int64_arg(FunctionCallInfo fcinfo, int n, const char* name, Where where = Where::here());
text* text_arg(FunctionCallInfo fcinfo, int n, const char* name, Where where = Where::here());
Jsonb* jsonb_arg(FunctionCallInfo fcinfo, int n, const char* name, Where where = Where::here());
Interval* interval_arg(FunctionCallInfo fcinfo, int n, const char* name, Where where = Where::here());
// Optional text argument (nullptr when NULL), detoasted under guard.
text* optional_text_arg(FunctionCallInfo fcinfo, int n);

// The bytes of a text value (not NUL-terminated).
std::string_view text_view(const text* t);
// A uuid as text (8-4-4-4-12 lowercase hex), for messages that name a tenant or a run.
std::string uuid_text(const pg_uuid_t* id);
// A text value in double quotes, as Postgres quotes a name in a message.
std::string quoted(const text* t);
// The number of characters of a text value in the server encoding.
std::int64_t text_chars(const text* t);

// An interval as microseconds, a month counted as 30 days; saturates instead of overflowing.
std::int64_t interval_usec(const Interval* iv);

// True when the jsonb value is an object (not an array, not a scalar).
bool jsonb_is_object(const Jsonb* jb);
// True when the jsonb value is an object with no keys.
bool jsonb_is_empty_object(const Jsonb* jb);
// True when the jsonb value is an object with the key `key` at its top level.
bool jsonb_has_key(const Jsonb* jb, const char* key);
// The stored size of a jsonb value in bytes.
std::int64_t jsonb_bytes(const Jsonb* jb);
// The kind of a jsonb value (object, array, string, ...).
cause::JsonKind jsonb_kind(const Jsonb* jb);

// Refuses (22023) a payload or binding that is not an object or is too large, and a
// binding whose cause has the wrong shape or an unreadable schedule or webhook.
void check_object_argument(const char* name, const Jsonb* jb, Where where = Where::here());
void check_binding(const Jsonb* binding);
// Refuses (22023) a result that is too large.
void check_result(const Jsonb* result);

// The largest payload, binding or result accepted (GUC baton.max_payload_bytes).
std::int64_t max_payload_bytes();

// Text datums for SQL parameters, from text in the server encoding.
Datum text_datum(std::string_view s);
// The same from UTF-8 text the core holds (stage names, `when` paths, decision reasons),
// converted to the server encoding (a no-op in UTF8 databases).
Datum text_from_utf8(std::string_view s);

// A tenant (any uuid) as text, for messages (palloc'd).
char* tenant_text(const pg_uuid_t* tenant);

}  // namespace baton::pg
