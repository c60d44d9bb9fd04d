// One step of a background worker whose error must not end the worker: the reaper's
// batches, the relay's reads and sends.
#pragma once

#include "pg/runtime/postgres.hpp"

namespace baton::pg::workers {

// Runs fn(arg) under PG_TRY. An error it raises is logged, its transaction (if any)
// aborted, the memory context and error state reset; then it returns false. Plain
// Postgres code: fn must hold no C++ object with a destructor.
bool logged(void (*fn)(void*), void* arg);

}  // namespace baton::pg::workers
