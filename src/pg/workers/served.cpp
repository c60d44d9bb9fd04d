// Which databases the reapers serve (see served.hpp).
#include <cstring>

#include "pg/runtime/postgres.hpp"
#include "pg/runtime/settings.hpp"
#include "pg/workers/served.hpp"

namespace baton::pg::served {

bool database_names(bool quiet, List** names, bool* all) {
    *names = NIL;
    *all = false;
    if (settings::reaper_databases == nullptr || settings::reaper_databases[0] == '\0') return true;
    char* raw = pstrdup(settings::reaper_databases);
    List* items = NIL;
    if (!SplitGUCList(raw, ',', &items)) {
        if (!quiet)
            ereport(WARNING, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                              errmsg("invalid list syntax in parameter \"baton.reaper_databases\""),
                              errdetail("No pg_baton reaper is started.")));
        return false;
    }
    ListCell* lc;
    foreach (lc, items) {
        const char* db = static_cast<const char*>(lfirst(lc));
        if (db[0] == '\0') continue;
        if (std::strcmp(db, "*") == 0) {
            *all = true;
            continue;
        }
        if (std::strlen(db) >= NAMEDATALEN) {
            if (!quiet)
                ereport(WARNING, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                                  errmsg("database name \"%s\" in baton.reaper_databases is too long", db),
                                  errdetail("No pg_baton reaper is started for it.")));
            continue;
        }
        *names = lappend(*names, const_cast<char*>(db));
    }
    return true;
}

bool serves(const char* name) {
    List* names = NIL;
    bool all = false;
    if (name == nullptr || !database_names(true, &names, &all)) return false;
    if (all) return true;
    ListCell* lc;
    foreach (lc, names)
        if (std::strcmp(static_cast<const char*>(lfirst(lc)), name) == 0) return true;
    return false;
}

}  // namespace baton::pg::served
