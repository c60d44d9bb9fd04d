// Array arguments deconstructed into plain values (see arrays.hpp).
#include <string>

#include "core/error.hpp"
#include "pg/runtime/args.hpp"
#include "pg/runtime/arrays.hpp"

namespace baton::pg {

// Detoasts and deconstructs under guard(); the refusals are built outside it.
Int64Array int64_array_arg(FunctionCallInfo fcinfo, int n, const char* name) {
    require(fcinfo, n, name);
    Datum d = PG_GETARG_DATUM(n);
    ArrayType* array = guard([d] { return DatumGetArrayTypeP(d); });
    if (ARR_NDIM(array) > 1) throw_invalid_argument(name, std::string(name) + " is a one-dimensional array.");
    Int64Array out{d, nullptr, 0};
    bool* nulls = nullptr;
    guard([array, &out, &nulls] {
        deconstruct_array(array, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &out.values, &nulls, &out.n);
    });
    for (int i = 0; i < out.n; i++)
        if (nulls[i]) throw_invalid_argument(name, std::string(name) + " holds no NULL.");
    return out;
}

}  // namespace baton::pg
