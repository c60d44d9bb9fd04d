// The hooks of the rooms above the runtime (see hooks.hpp).
#include "pg/runtime/hooks.hpp"

namespace baton::pg::hooks {

namespace {
Hooks g_hooks;
}  // namespace

void install(const Hooks& hooks) { g_hooks = hooks; }

const Hooks& installed() { return g_hooks; }

}  // namespace baton::pg::hooks
