// One step of a background worker whose error must not end the worker (see logged.hpp).
#include "pg/workers/logged.hpp"

namespace baton::pg::workers {

bool logged(void (*fn)(void*), void* arg) {
    volatile bool ok = true;
    PG_TRY();
    { fn(arg); }
    PG_CATCH();
    {
        HOLD_INTERRUPTS();
        EmitErrorReport();
        AbortCurrentTransaction();
        MemoryContextSwitchTo(TopMemoryContext);
        FlushErrorState();
        pgstat_report_activity(STATE_IDLE, nullptr);
        RESUME_INTERRUPTS();
        ok = false;
    }
    PG_END_TRY();
    return ok;
}

}  // namespace baton::pg::workers
