// Array arguments deconstructed into plain values at the boundary.
#pragma once

#include "pg/runtime/boundary.hpp"

namespace baton::pg {

// An int8[] argument: the array datum as passed (for a statement that takes it whole)
// and its elements (palloc'd Datums).
struct Int64Array {
    Datum array;
    Datum* values;
    int n;
};

// Argument n as an Int64Array: 22004 naming it when NULL; 22023 unless it has one
// dimension and no NULL element.
Int64Array int64_array_arg(FunctionCallInfo fcinfo, int n, const char* name);

}  // namespace baton::pg
