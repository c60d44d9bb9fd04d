// A workflow's decide function, in one place: resolved when a definition names it (the
// version stores its signature), and called, as the calling role, when a run leaves a
// stage, found again by that signature.
#pragma once

#include <string>

#include "pg/runtime/boundary.hpp"

namespace baton::pg::decide {

// The function a definition's decide names: it must exist as name(jsonb), be a plain
// function and return one jsonb. Throws baton::Error 22023 with a detail naming the
// fault; define_workflow names the workflow in its message.
Oid resolve(const std::string& name);

// Calls decide function fn (named `name` in the definition) with the decision context,
// as `caller`, who needs EXECUTE on it: user code never runs with the extension owner's
// rights. 42883 when the function no longer exists or is no longer a function (jsonb)
// RETURNS jsonb, 42501 without EXECUTE. Returns its
// result detoasted, or nullptr for SQL NULL.
Jsonb* call(Oid fn, const std::string& name, Oid caller, Datum context);

}  // namespace baton::pg::decide
