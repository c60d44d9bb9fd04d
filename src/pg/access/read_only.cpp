// Writes refused on a standby and in read-only transactions (see read_only.hpp).
#include <string>

#include "core/error.hpp"
#include "pg/access/read_only.hpp"
#include "pg/runtime/hooks.hpp"

namespace baton::pg {

// The before_write hook first (hooks.hpp: a write inside a Citus shard query, refused
// with 0A000). Then recovery before read-only: a standby's transactions are all
// read-only, and "during recovery" tells the caller that no setting of its own would let
// the call through there.
void require_read_write(const char* function) {
    if (hooks::installed().before_write != nullptr) hooks::installed().before_write(function);
    bool in_recovery = guard([] { return RecoveryInProgress(); });
    bool read_only = in_recovery || guard([] { return static_cast<bool>(XactReadOnly); });
    if (!read_only) return;
    std::string name = std::string(function) + "()";
    if (in_recovery)
        throw Error(SqlState::kReadOnlyTransaction, "cannot execute " + name + " during recovery",
                    "This server is a standby: it replays the primary's WAL and answers reads, but pg_baton's "
                    "write functions change rows and run only on the primary.",
                    "Call " + name + " on the primary; on a standby only the read functions and views answer.");
    throw Error(SqlState::kReadOnlyTransaction, "cannot execute " + name + " in a read-only transaction",
                "The transaction is read-only (BEGIN READ ONLY, SET TRANSACTION READ ONLY or "
                "default_transaction_read_only), and " + name + " changes rows.",
                "Call " + name + " in a read-write transaction.");
}

}  // namespace baton::pg
