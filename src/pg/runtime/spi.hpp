// SPI as RAII types: a connection that finishes itself, and plans prepared once per
// backend and kept. Every call into SPI goes through guard(), so a Postgres error
// unwinds the C++ stack as a PgError.
#pragma once

#include <cstdint>

#include "pg/runtime/boundary.hpp"

namespace baton::pg {

// A statement prepared on first use and kept for the life of the backend, run with its
// generic plan (no planning per call), or on a Citus install with a custom plan per call
// (see KeptPlan::get()). Declared as
// a constant-initialized static (no constructor runs); every statement is schema-
// qualified down to its operators, so no search_path can change what it means.
struct KeptPlan {
    const char* sql;
    int nargs;
    Oid argtypes[10];
    SPIPlanPtr plan;  // null until first prepared
    // The statement reads no table Citus distributes (catalogs, Citus' metadata): its
    // generic plan serves a distributed install too.
    bool generic_on_citus = false;

    // The prepared plan; prepares and keeps it inside the current SPI connection.
    SPIPlanPtr get();
};

// One SPI connection. The destructor finishes it on normal exit. While an exception
// unwinds, it leaves the connection to the transaction (or subtransaction) abort that
// the boundary's ERROR always causes: after a Postgres error the SPI stack may still
// hold inner levels, and only AtEOXact_SPI unwinds them correctly.
class Spi {
public:
    Spi();
    ~Spi();
    Spi(const Spi&) = delete;
    Spi& operator=(const Spi&) = delete;

    // Executes plan with values/nulls (nulls: ' ' or 'n' per argument); returns the row count.
    std::uint64_t run(KeptPlan& plan, const Datum* values, const char* nulls, long limit = 0);
    // The same, reading the latest committed data (and this transaction's own writes)
    // rather than the transaction's snapshot: for the fence and for numbering entries
    // under a lock, under REPEATABLE READ too. Triggers fire as usual.
    std::uint64_t run_latest(KeptPlan& plan, const Datum* values, const char* nulls);
    // Executes a one-off utility or query string (no parameters).
    void exec(const char* sql);
    // Executes a one-off statement with parameters of argtypes (planned for this call,
    // not kept); returns the row count.
    std::uint64_t run_once(const char* sql, int nargs, const Oid* argtypes, const Datum* values);

    // Column col (1-based) of row of the last result.
    Datum value(std::uint64_t row, int col, bool* isnull) const;
    bool is_null(std::uint64_t row, int col) const;
    std::int64_t int64_at(std::uint64_t row, int col) const;
    std::int32_t int32_at(std::uint64_t row, int col) const;
    bool bool_at(std::uint64_t row, int col) const;
    Oid oid_at(std::uint64_t row, int col) const;  // InvalidOid when NULL
    // The type of column col (1-based) of the last result.
    Oid column_type(int col) const;
    // A text column as a NUL-terminated copy in SPI's memory (valid until the connection ends).
    char* cstring_at(std::uint64_t row, int col) const;
    // A by-reference column copied out of SPI memory, so it outlives the connection.
    Datum copy_out(std::uint64_t row, int col, bool* isnull) const;
    // Appends row `row` of the last result to a set-returning function's result: its
    // first columns, as many as the function returns (the tuplestore copies them).
    void emit_row(ReturnSetInfo* rsinfo, std::uint64_t row) const;

private:
    int uncaught_;  // exceptions in flight when connected
    bool connected_;
};

// Sets a set-returning function up to return its rows materialized (all at once).
ReturnSetInfo* materialize(FunctionCallInfo fcinfo);
// Appends one row of values to a set-returning function's result.
void put_row(ReturnSetInfo* rsinfo, Datum* values, bool* nulls);

}  // namespace baton::pg
