// SPI as RAII types (see spi.hpp).
#include <exception>

#include "core/error.hpp"

#include "pg/runtime/hooks.hpp"
#include "pg/runtime/spi.hpp"

namespace baton::pg {

// Always the generic plan, planned once per backend, never again per call (the
// statements are written so that their generic plans are index probes), unless the
// custom_plans hook says otherwise (hooks.hpp: a distributed Citus install) for a
// statement that is not generic_on_citus. A plan
// prepared under the other answer is prepared again.
SPIPlanPtr KeptPlan::get() {
    const hooks::Hooks& h = hooks::installed();
    bool custom = !generic_on_citus && h.custom_plans != nullptr && h.custom_plans();
    if (plan != nullptr && ((plan->cursor_options & CURSOR_OPT_CUSTOM_PLAN) != 0) == custom) return plan;
    KeptPlan* self = this;
    if (plan != nullptr) {
        SPIPlanPtr old = plan;
        plan = nullptr;
        guard([old] { (void)SPI_freeplan(old); });
    }
    int options = custom ? CURSOR_OPT_CUSTOM_PLAN : CURSOR_OPT_GENERIC_PLAN;
    plan = guard([self, options] {
        SPIPlanPtr p = SPI_prepare_cursor(self->sql, self->nargs, self->argtypes, options);
        if (p == nullptr)
            elog(ERROR, "pg_baton could not prepare a statement: %s", SPI_result_code_string(SPI_result));
        if (SPI_keepplan(p) != 0) elog(ERROR, "pg_baton could not keep a prepared statement");
        return p;
    });
    return plan;
}

// The before_statement hook may refuse the call first (hooks.hpp: a call inside a Citus
// shard query that may not run statements there).
Spi::Spi() : uncaught_(std::uncaught_exceptions()), connected_(false) {
    if (hooks::installed().before_statement != nullptr) hooks::installed().before_statement();
    int rc = guard([] { return SPI_connect(); });
    if (rc != SPI_OK_CONNECT)
        throw Error(SqlState::kInternal, "pg_baton could not connect to SPI", SPI_result_code_string(rc));
    connected_ = true;
}

Spi::~Spi() {
    if (!connected_ || std::uncaught_exceptions() > uncaught_) return;
    // SPI_finish only fails when the SPI stack is already broken; nothing to do then.
    (void)SPI_finish();
}

std::uint64_t Spi::run(KeptPlan& plan, const Datum* values, const char* nulls, long limit) {
    SPIPlanPtr p = plan.get();
    int rc = guard([p, values, nulls, limit] {
        return SPI_execute_plan(p, const_cast<Datum*>(values), nulls, false, limit);
    });
    if (rc < 0) {
        const char* sql = plan.sql;
        guard([rc, sql] {
            elog(ERROR, "pg_baton statement failed (%s): %s", SPI_result_code_string(rc), sql);
        });
    }
    return SPI_processed;
}

std::uint64_t Spi::run_latest(KeptPlan& plan, const Datum* values, const char* nulls) {
    SPIPlanPtr p = plan.get();
    int rc = guard([p, values, nulls] {
        return SPI_execute_snapshot(p, const_cast<Datum*>(values), nulls, GetLatestSnapshot(),
                                    InvalidSnapshot, false, true, 0);
    });
    if (rc < 0) {
        const char* sql = plan.sql;
        guard([rc, sql] {
            elog(ERROR, "pg_baton statement failed (%s): %s", SPI_result_code_string(rc), sql);
        });
    }
    return SPI_processed;
}

void Spi::exec(const char* sql) {
    int rc = guard([sql] { return SPI_execute(sql, false, 0); });
    if (rc < 0) {
        guard([rc, sql] {
            elog(ERROR, "pg_baton statement failed (%s): %s", SPI_result_code_string(rc), sql);
        });
    }
}

// SPI_execute_with_args, no nulls.
std::uint64_t Spi::run_once(const char* sql, int nargs, const Oid* argtypes, const Datum* values) {
    int rc = guard([sql, nargs, argtypes, values] {
        return SPI_execute_with_args(sql, nargs, const_cast<Oid*>(argtypes), const_cast<Datum*>(values), nullptr,
                                     false, 0);
    });
    if (rc < 0) {
        guard([rc, sql] {
            elog(ERROR, "pg_baton statement failed (%s): %s", SPI_result_code_string(rc), sql);
        });
    }
    return SPI_processed;
}

Datum Spi::value(std::uint64_t row, int col, bool* isnull) const {
    // SPI_getbinval raises no error for a valid row and column.
    return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, isnull);
}

bool Spi::is_null(std::uint64_t row, int col) const {
    bool isnull = false;
    (void)value(row, col, &isnull);
    return isnull;
}

std::int64_t Spi::int64_at(std::uint64_t row, int col) const {
    bool isnull = false;
    Datum d = value(row, col, &isnull);
    return isnull ? 0 : DatumGetInt64(d);
}

std::int32_t Spi::int32_at(std::uint64_t row, int col) const {
    bool isnull = false;
    Datum d = value(row, col, &isnull);
    return isnull ? 0 : DatumGetInt32(d);
}

bool Spi::bool_at(std::uint64_t row, int col) const {
    bool isnull = false;
    Datum d = value(row, col, &isnull);
    return !isnull && DatumGetBool(d);
}

Oid Spi::oid_at(std::uint64_t row, int col) const {
    bool isnull = false;
    Datum d = value(row, col, &isnull);
    return isnull ? InvalidOid : DatumGetObjectId(d);
}

// From the result's tuple descriptor (no catalog lookup).
Oid Spi::column_type(int col) const { return TupleDescAttr(SPI_tuptable->tupdesc, col - 1)->atttypid; }

char* Spi::cstring_at(std::uint64_t row, int col) const {
    bool isnull = false;
    Datum d = value(row, col, &isnull);
    if (isnull) return nullptr;
    return guard([d] { return text_to_cstring(DatumGetTextPP(d)); });
}

Datum Spi::copy_out(std::uint64_t row, int col, bool* isnull) const {
    Datum d = value(row, col, isnull);
    if (*isnull) return d;
    Form_pg_attribute att = TupleDescAttr(SPI_tuptable->tupdesc, col - 1);
    bool byval = att->attbyval;
    int16 len = att->attlen;
    return guard([d, byval, len] { return SPI_datumTransfer(d, byval, len); });
}

void Spi::emit_row(ReturnSetInfo* rsinfo, std::uint64_t row) const {
    constexpr int kMaxColumns = 32;
    int natts = rsinfo->setDesc->natts;
    if (natts > kMaxColumns) throw Error(SqlState::kInternal, "pg_baton returns too many columns");
    Datum values[kMaxColumns];
    bool nulls[kMaxColumns];
    for (int col = 0; col < natts; col++) values[col] = value(row, col + 1, &nulls[col]);
    put_row(rsinfo, values, nulls);
}

ReturnSetInfo* materialize(FunctionCallInfo fcinfo) {
    // The caller's expected descriptor, when it has one, is the function's declared row
    // (a FunctionScan, or a set-returning call in a target list, built it from the same
    // pg_proc entry): copying it costs a tenth of building it again from pg_proc's
    // argument arrays, as get_call_result_type() does on every call of a function
    // declared RETURNS TABLE.
    auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    bits32 flags = rsinfo != nullptr && IsA(rsinfo, ReturnSetInfo) && rsinfo->expectedDesc != nullptr
                       ? MAT_SRF_USE_EXPECTED_DESC
                       : 0;
    guard([fcinfo, flags] { InitMaterializedSRF(fcinfo, flags); });
    return reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
}

void put_row(ReturnSetInfo* rsinfo, Datum* values, bool* nulls) {
    guard([rsinfo, values, nulls] { tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls); });
}

}  // namespace baton::pg
