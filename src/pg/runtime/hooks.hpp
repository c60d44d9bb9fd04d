// What a room above the runtime adds to the calls and statements the runtime runs,
// registered once from _PG_init, so that the runtime never names the room: Citus'
// (pg/citus/citus_nested.hpp) checks a call made inside a shard query and picks how kept
// plans are planned. Without a registration every hook is a no-op.
#pragma once

#include "pg/runtime/postgres.hpp"

namespace baton::pg::hooks {

struct Hooks {
    // Before the body of a SQL-callable function run as the owner (boundary.hpp, entry());
    // returns what leave() gets back.
    void* (*enter)(FunctionCallInfo fcinfo) = nullptr;
    // After that body, or, with `unwinding`, after it failed: then it must make no Postgres
    // call that can fail (what enter() set is left to the abort).
    void (*leave)(void* entered, bool unwinding) = nullptr;
    // When an SPI connection opens, before its first statement (spi.hpp); throws to refuse.
    void (*before_statement)() = nullptr;
    // Before the first write of `function` (pg/access/read_only.hpp); throws to refuse.
    void (*before_write)(const char* function) = nullptr;
    // Whether kept plans are planned for each call (custom) rather than once (generic).
    bool (*custom_plans)() = nullptr;
};

// Registers the hooks (once, from _PG_init).
void install(const Hooks& hooks);

// The hooks registered (each null when none).
const Hooks& installed();

}  // namespace baton::pg::hooks
