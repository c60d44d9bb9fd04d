// Writes refused where Postgres refuses them: on a standby (hot standby, during
// recovery) and in a read-only transaction on a primary.
//
// Each write function of the contract calls require_read_write() first, before it reads
// its arguments or takes a lock. Its statements would mostly be refused by Postgres
// anyway, but each with its own words ("cannot execute INSERT in a read-only
// transaction") and some not at all: the direct heap and index path of claim and finish
// (pg/deliveries/delivery_store.hpp) writes without the executor's read-only check, so in a
// read-only transaction it would write, and on a standby it fails deep in the heap code
// ("cannot assign TransactionIds during recovery", XX000). One check up front gives
// every write function the same refusal, naming it, with Postgres' SQLSTATE 25006.
#pragma once

#include "pg/runtime/boundary.hpp"

namespace baton::pg {

// Throws 25006 (read_only_sql_transaction) naming `function` (e.g. "baton.claim")
// when the server is in recovery ("cannot execute baton.claim() during recovery") or
// the current transaction is read-only ("... in a read-only transaction"), as
// Postgres' PreventCommandIfReadOnly() / PreventCommandDuringRecovery() do for SQL
// commands; returns otherwise.
void require_read_write(const char* function);

}  // namespace baton::pg
