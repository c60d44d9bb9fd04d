// The NOTIFY an enqueue sends (see notify.hpp).
#include "core/tenant.hpp"
#include "pg/fence.hpp"
#include "pg/notify.hpp"
#include "pg/settings.hpp"

namespace baton::pg::notify {

// The payload is JSON built by hand: the tenant's uuid text needs no escaping, the
// target goes through escape_json.
void enqueued(const pg_uuid_t* tenant, const text* target) {
    if (!settings::notify) return;
    char* tenant_id = fence::tenant_text(tenant);
    guard([tenant_id, target] {
        StringInfoData buf;
        initStringInfo(&buf);
        appendStringInfoString(&buf, "{\"tenant\": \"");
        appendStringInfoString(&buf, tenant_id);
        appendStringInfoString(&buf, "\", \"target\": ");
        escape_json(&buf, text_to_cstring(target));
        appendStringInfoChar(&buf, '}');
        Async_Notify("baton_enqueue", buf.data);
    });
}

}  // namespace baton::pg::notify
