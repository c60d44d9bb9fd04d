// The reaper's launcher (see launcher.hpp).
//
// Plain Postgres code, as the reaper: no C++ object with a destructor lives in the
// launcher, the hook or the callbacks, so a Postgres error may longjmp through them.
#include <algorithm>
#include <csignal>
#include <cstring>

#include "core/scan_floor.hpp"
#include "pg/workers/launcher.hpp"
#include "pg/runtime/postgres.hpp"
#include "pg/runtime/settings.hpp"
#include "pg/workers/relay.hpp"
#include "pg/workers/served.hpp"

extern "C" {
PGDLLEXPORT void baton_launcher_main(Datum arg);
}

namespace baton::pg::launcher {

namespace {

constexpr int kLauncherRestartSeconds = 5;  // the launcher itself, after an error
constexpr int kRetrySeconds = 5;            // a worker that stopped without a reason
constexpr int kPauseSeconds = 300;          // a pause outlives its command at most this long
constexpr int kMaxTick = 1000;              // the launcher looks at least every second
constexpr int kSpareSlots = 64;             // shared slots beyond max_worker_processes

// One database in shared memory: its worker, its pause, its announcements.
struct Slot {
    Oid db;                     // InvalidOid: free
    pid_t worker_pid;           // its reaper worker, 0 when none runs
    TimestampTz paused_until;   // no worker before then (0: not paused)
    bool stop_requested;        // a command asked its worker to exit
    bool serving;               // its worker stays (found pg_baton, or a listed database)
    uint32_t announced;         // committed CREATE EXTENSIONs seen there
    bool absent;                // its worker found no pg_baton ...
    uint32_t absent_announced;  // ... having started from this announcement count
    TransactionId installing;   // a transaction not ended yet that installs pg_baton there
                                // (prepared, awaiting COMMIT PREPARED): its end announces
    TimestampTz last_reaped;    // its worker's last batch (0: none yet)
    pg_atomic_uint64 early_lease;  // the earliest expiry of a lease row written early
                                   // (core/scan_floor.hpp), DT_NOEND when none
    slock_t purge_mutex;           // guards purge_floor and purge_reported
    scan_floor::State purge_floor;  // where purge reads deliveries from, by creation
    TimestampTz purge_reported;     // the earliest creation writers reported since the last
                                    // full read (DT_NOEND: none), kept across the reads
                                    // between, which may not see the writer's row yet
};

// The shared state: this header, then `nslots` slots.
struct Shared {
    pid_t launcher_pid;
    int nslots;
    Slot* slots;  // right after the header, in this process's mapping
};

Shared* g_shared = nullptr;
LWLock* g_lock = nullptr;
shmem_request_hook_type g_prev_request = nullptr;
shmem_startup_hook_type g_prev_startup = nullptr;
ProcessUtility_hook_type g_prev_utility = nullptr;

// This backend's transaction: the databases it paused, whether it installed pg_baton,
// and its xid when it installed pg_baton and is being prepared for two-phase commit.
constexpr int kMaxPaused = 8;
Oid g_paused[kMaxPaused];
int g_npaused = 0;
bool g_announce = false;
TransactionId g_preparing = InvalidTransactionId;

volatile sig_atomic_t g_terminate = false;

// The size of the shared state.
Size shared_size() {
    return add_size(MAXALIGN(sizeof(Shared)), mul_size(max_worker_processes + kSpareSlots, sizeof(Slot)));
}

// shmem_request_hook: reserves the shared state and its lock.
void request_shmem() {
    if (g_prev_request) g_prev_request();
    RequestAddinShmemSpace(shared_size());
    RequestNamedLWLockTranche("pg_baton launcher", 1);
}

// shmem_startup_hook: creates (or finds) the shared state.
void startup_shmem() {
    if (g_prev_startup) g_prev_startup();
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    bool found = false;
    g_shared = static_cast<Shared*>(ShmemInitStruct("pg_baton launcher", shared_size(), &found));
    if (!found) {
        std::memset(g_shared, 0, shared_size());
        g_shared->nslots = max_worker_processes + kSpareSlots;
    }
    g_shared->slots = reinterpret_cast<Slot*>(reinterpret_cast<char*>(g_shared) + MAXALIGN(sizeof(Shared)));
    g_lock = &(GetNamedLWLockTranche("pg_baton launcher"))->lock;
    LWLockRelease(AddinShmemInitLock);
}

// The slot of a database, taken if `create` and there is a free one; null otherwise.
// Under g_lock (exclusive when creating).
Slot* find_slot(Oid db, bool create) {
    Slot* free_slot = nullptr;
    for (int i = 0; i < g_shared->nslots; i++) {
        Slot* s = &g_shared->slots[i];
        if (s->db == db) return s;
        if (s->db == InvalidOid && free_slot == nullptr) free_slot = s;
    }
    if (!create || free_slot == nullptr) return nullptr;
    std::memset(static_cast<void*>(free_slot), 0, sizeof *free_slot);  // plain data in shared memory
    free_slot->db = db;
    pg_atomic_init_u64(&free_slot->early_lease, static_cast<uint64>(DT_NOEND));
    SpinLockInit(&free_slot->purge_mutex);
    free_slot->purge_floor = scan_floor::State{};
    free_slot->purge_reported = DT_NOEND;
    return free_slot;
}

// Runs step(slot) on db's slot under the slots' lock in `mode` (SHARED for what a slot's
// own atomics or spinlock guard); nothing when the shared state or the slot is absent.
// The steps are plain data moves: no error can be raised while the lock is held.
template <typename Step>
void on_slot(Oid db, LWLockMode mode, Step step) {
    if (g_shared == nullptr) return;
    LWLockAcquire(g_lock, mode);
    Slot* s = find_slot(db, false);
    if (s != nullptr) step(*s);
    LWLockRelease(g_lock);
}

// Runs step(slot) on this database's slot, under its purge floor's spinlock.
template <typename Step>
void on_purge_floor(Step step) {
    on_slot(MyDatabaseId, LW_SHARED, [&](Slot& s) {
        SpinLockAcquire(&s.purge_mutex);
        step(s);
        SpinLockRelease(&s.purge_mutex);
    });
}

// Wakes the launcher (its latch, through SIGUSR1), if it runs.
void wake_launcher() {
    if (g_shared == nullptr) return;
    pid_t pid = g_shared->launcher_pid;
    if (pid != 0) kill(pid, SIGUSR1);
}

// Asks the sessions of the other nodes' relays in database db (pg/workers/relay, on a
// distributed install) to exit: the command that needs the database free waits for
// them as for any session. Each relay connects again a few seconds later, once the
// command has let go of the database.
void end_relay_sessions(Oid db) {
    int n = pgstat_fetch_stat_numbackends();
    for (int i = 1; i <= n; i++) {
        LocalPgBackendStatus* local = compat::backend_status(i);
        if (local == nullptr) continue;
        const PgBackendStatus& b = local->backendStatus;
        if (b.st_databaseid == db && b.st_procpid != MyProcPid && std::strcmp(b.st_appname, relay::kApplicationName) == 0)
            kill(b.st_procpid, SIGTERM);
    }
}

// Pauses the reaper of the database `name` for the rest of this transaction: no worker
// starts there, and the one running is asked to exit (SIGTERM; it ends its batch), so
// that the command that needs the database to itself finds it free. Only for a role
// that owns the database (a superuser does): the command would refuse anyone else, who
// must not hold the reaper off with commands that fail.
void pause_database(const char* name) {
    if (g_shared == nullptr || name == nullptr) return;
    Oid db = get_database_oid(name, true);
    if (!OidIsValid(db) || !BATON_OWNS_DATABASE(db, GetUserId())) return;
    if (g_npaused >= kMaxPaused) return;
    pid_t pid = 0;
    LWLockAcquire(g_lock, LW_EXCLUSIVE);
    Slot* s = find_slot(db, true);
    if (s != nullptr) {
        s->paused_until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), kPauseSeconds * 1000);
        s->stop_requested = true;
        pid = s->worker_pid;
    }
    LWLockRelease(g_lock);
    if (s == nullptr) return;
    g_paused[g_npaused++] = db;
    if (pid != 0) kill(pid, SIGTERM);
    end_relay_sessions(db);
}

// The TEMPLATE option of CREATE DATABASE, or null.
const char* template_of(CreatedbStmt* stmt) {
    ListCell* lc;
    foreach (lc, stmt->options) {
        DefElem* opt = static_cast<DefElem*>(lfirst(lc));
        if (std::strcmp(opt->defname, "template") == 0 && opt->arg != nullptr) return defGetString(opt);
    }
    return nullptr;
}

// Whether ALTER DATABASE sets the tablespace (which moves the database's files and
// needs it free of connections).
bool moves_tablespace(AlterDatabaseStmt* stmt) {
    ListCell* lc;
    foreach (lc, stmt->options) {
        DefElem* opt = static_cast<DefElem*>(lfirst(lc));
        if (std::strcmp(opt->defname, "tablespace") == 0) return true;
    }
    return false;
}

// ProcessUtility_hook: pauses the reaper of a database that a command needs free of
// connections, before the command runs; after a CREATE EXTENSION (of pg_baton, or of an
// extension that brought it along), marks the transaction to announce this database to
// the launcher when it commits.
void utility_hook(PlannedStmt* pstmt, const char* query, bool read_only_tree, ProcessUtilityContext context,
                  ParamListInfo params, QueryEnvironment* env, DestReceiver* dest, QueryCompletion* qc) {
    Node* stmt = pstmt->utilityStmt;
    switch (nodeTag(stmt)) {
        case T_DropdbStmt:
            pause_database(castNode(DropdbStmt, stmt)->dbname);
            break;
        case T_RenameStmt:
            if (castNode(RenameStmt, stmt)->renameType == OBJECT_DATABASE)
                pause_database(castNode(RenameStmt, stmt)->subname);
            break;
        case T_AlterDatabaseStmt:
            if (moves_tablespace(castNode(AlterDatabaseStmt, stmt)))
                pause_database(castNode(AlterDatabaseStmt, stmt)->dbname);
            break;
        case T_CreatedbStmt:
            pause_database(template_of(castNode(CreatedbStmt, stmt)));
            break;
        default:
            break;
    }
    bool create_extension = IsA(stmt, CreateExtensionStmt);
    if (g_prev_utility)
        g_prev_utility(pstmt, query, read_only_tree, context, params, env, dest, qc);
    else
        standard_ProcessUtility(pstmt, query, read_only_tree, context, params, env, dest, qc);
    if (create_extension && OidIsValid(get_extension_oid("pg_baton", true))) g_announce = true;
}

// Transaction callback: at the end of the transaction (commit, abort or prepare) lifts
// its pauses; after a commit that installed pg_baton announces the database, and after
// a PREPARE TRANSACTION that installed it records the prepared transaction's xid in the
// database's slot (its COMMIT PREPARED comes later, maybe from another backend, and
// calls no callback of this one: the launcher announces the database once that xid is
// no longer in progress); then wakes the launcher.
void on_xact(XactEvent event, void*) {
    if (event == XACT_EVENT_PRE_PREPARE) {
        if (g_announce) g_preparing = GetTopTransactionIdIfAny();
        return;
    }
    if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT && event != XACT_EVENT_PREPARE) return;
    bool announce = g_announce && event == XACT_EVENT_COMMIT;
    TransactionId prepared = event == XACT_EVENT_PREPARE ? g_preparing : InvalidTransactionId;
    g_preparing = InvalidTransactionId;
    if (g_shared == nullptr || (g_npaused == 0 && !announce && !TransactionIdIsValid(prepared))) {
        g_npaused = 0;
        g_announce = false;
        return;
    }
    LWLockAcquire(g_lock, LW_EXCLUSIVE);
    for (int i = 0; i < g_npaused; i++) {
        Slot* s = find_slot(g_paused[i], false);
        if (s != nullptr) s->paused_until = 0;
    }
    if (announce || TransactionIdIsValid(prepared)) {
        Slot* s = find_slot(MyDatabaseId, true);
        if (s != nullptr && announce) s->announced++;
        if (s != nullptr && TransactionIdIsValid(prepared)) s->installing = prepared;
    }
    LWLockRelease(g_lock);
    g_npaused = 0;
    g_announce = false;
    wake_launcher();
}

// What the launcher knows of one database, in its own memory.
enum class State : uint8_t {
    kStart,    // to start a worker (not seen yet, or known to have pg_baton)
    kRunning,  // a worker runs (handle null: found running when the launcher started)
    kRetry,    // a worker stopped; start another at retry_at
    kAbsent,   // no pg_baton there: nothing until an announcement
};

struct Db {
    Oid db;  // the hash key
    State state;
    bool seen;  // in pg_database at the last look
    BackgroundWorkerHandle* handle;
    TimestampTz retry_at;
    uint32_t announced;  // the shared announcement count last seen
    char name[NAMEDATALEN];
};

HTAB* g_dbs = nullptr;
List* g_names = NIL;  // baton.reaper_databases, a list of names (not '*')
bool g_all = true;
bool g_said_no_slot = false;
bool* g_said_missing = nullptr;  // per name of g_names: said that it does not exist

// SIGTERM: ends the launcher's loop; the latch wakes it.
void on_sigterm(SIGNAL_ARGS) {
    int saved_errno = errno;
    g_terminate = true;
    SetLatch(MyLatch);
    errno = saved_errno;
}

// Whether `name` is in the list of baton.reaper_databases.
bool listed(const char* name) {
    ListCell* lc;
    foreach (lc, g_names)
        if (std::strcmp(static_cast<const char*>(lfirst(lc)), name) == 0) return true;
    return false;
}

// With a list of names: says once of each name that no database has (yet) that its
// reaper starts when it does, and again if it disappears after having been served.
void say_missing_names() {
    if (g_all) return;
    ListCell* lc;
    int i = 0;
    foreach (lc, g_names) {
        const char* name = static_cast<const char*>(lfirst(lc));
        bool exists = false;
        HASH_SEQ_STATUS seq;
        Db* d;
        hash_seq_init(&seq, g_dbs);
        while ((d = static_cast<Db*>(hash_seq_search(&seq))) != nullptr)
            if (d->seen && std::strcmp(d->name, name) == 0) exists = true;
        if (!exists && !g_said_missing[i])
            ereport(LOG, (errmsg("database \"%s\" of baton.reaper_databases does not exist; its reaper starts "
                                 "when it does",
                                 name)));
        g_said_missing[i] = !exists;
        i++;
    }
}

// Announces each database whose installing transaction (Slot::installing) has ended,
// committed or rolled back: the worker started then finds out which. Inside a
// transaction with a snapshot (TransactionIdIsInProgress compares with RecentXmin).
void end_installs() {
    for (int i = 0; i < g_shared->nslots; i++) {
        Slot* s = &g_shared->slots[i];
        LWLockAcquire(g_lock, LW_SHARED);
        TransactionId xid = s->db != InvalidOid ? s->installing : InvalidTransactionId;
        LWLockRelease(g_lock);
        if (!TransactionIdIsValid(xid) || TransactionIdIsInProgress(xid)) continue;
        LWLockAcquire(g_lock, LW_EXCLUSIVE);
        if (s->installing == xid) {
            s->installing = InvalidTransactionId;
            s->announced++;
        }
        LWLockRelease(g_lock);
    }
}

// Reads pg_database (a shared catalog: the launcher needs no database) and brings the
// table of databases up to date: a database served and not known yet is to start; one
// renamed keeps its state under its new name; one gone is forgotten. Templates, those
// that refuse connections and those left invalid by an interrupted DROP DATABASE are not
// served. Then, in the same transaction, end_installs().
void scan_databases() {
    HASH_SEQ_STATUS seq;
    Db* d;
    hash_seq_init(&seq, g_dbs);
    while ((d = static_cast<Db*>(hash_seq_search(&seq))) != nullptr)
        d->seen = false;

    SetCurrentStatementStartTimestamp();
    StartTransactionCommand();
    (void)GetTransactionSnapshot();
    Relation rel = table_open(DatabaseRelationId, AccessShareLock);
    TableScanDesc scan = table_beginscan_catalog(rel, 0, nullptr);
    HeapTuple tup;
    while ((tup = heap_getnext(scan, ForwardScanDirection)) != nullptr) {
        auto* form = reinterpret_cast<Form_pg_database>(GETSTRUCT(tup));
        if (!form->datallowconn || form->datistemplate || form->datconnlimit == DATCONNLIMIT_INVALID_DB) continue;
        const char* name = NameStr(form->datname);
        if (!g_all && !listed(name)) continue;
        bool found = false;
        d = static_cast<Db*>(hash_search(g_dbs, &form->oid, HASH_ENTER, &found));
        if (!found) {
            d->state = State::kStart;
            d->handle = nullptr;
            d->retry_at = 0;
            d->announced = 0;
        }
        d->seen = true;
        strlcpy(d->name, name, NAMEDATALEN);
    }
    table_endscan(scan);
    table_close(rel, AccessShareLock);
    end_installs();
    CommitTransactionCommand();

    say_missing_names();
    hash_seq_init(&seq, g_dbs);
    while ((d = static_cast<Db*>(hash_seq_search(&seq))) != nullptr) {
        if (d->seen) continue;
        if (d->handle != nullptr) pfree(d->handle);
        Oid key = d->db;
        (void)hash_search(g_dbs, &key, HASH_REMOVE, nullptr);
    }
}

// Adopts the workers that run already (the launcher restarted after an error, its
// workers did not) and frees the shared slots of databases that are gone.
void adopt_workers() {
    LWLockAcquire(g_lock, LW_EXCLUSIVE);
    for (int i = 0; i < g_shared->nslots; i++) {
        Slot* s = &g_shared->slots[i];
        if (s->db == InvalidOid) continue;
        Db* d = static_cast<Db*>(hash_search(g_dbs, &s->db, HASH_FIND, nullptr));
        if (d == nullptr) {
            if (s->worker_pid == 0) s->db = InvalidOid;
            continue;
        }
        d->announced = s->announced;
        if (s->worker_pid != 0) d->state = State::kRunning;
    }
    LWLockRelease(g_lock);
}

// Whether the worker of `d` has stopped.
bool stopped(const Db* d, const Slot* s) {
    if (d->handle != nullptr) {
        pid_t pid;
        return GetBackgroundWorkerPid(d->handle, &pid) == BGWH_STOPPED;
    }
    return s == nullptr || s->worker_pid == 0;
}

// Frees the shared slots of databases the launcher does not serve (dropped, renamed
// out of the list, or paused by a command that is over) once no worker holds them.
void sweep_slots(TimestampTz now) {
    LWLockAcquire(g_lock, LW_EXCLUSIVE);
    for (int i = 0; i < g_shared->nslots; i++) {
        Slot* s = &g_shared->slots[i];
        if (s->db == InvalidOid || s->worker_pid != 0 || s->paused_until > now) continue;
        if (hash_search(g_dbs, &s->db, HASH_FIND, nullptr) == nullptr) s->db = InvalidOid;
    }
    LWLockRelease(g_lock);
}

// Whether one of the launcher's workers is only checking its database (not known yet
// to stay): its slot will be free again in a moment.
bool checks_in_flight() {
    bool checking = false;
    LWLockAcquire(g_lock, LW_SHARED);
    HASH_SEQ_STATUS seq;
    Db* d;
    hash_seq_init(&seq, g_dbs);
    while ((d = static_cast<Db*>(hash_seq_search(&seq))) != nullptr) {
        if (d->state != State::kRunning) continue;
        Slot* s = find_slot(d->db, false);
        if (s == nullptr || !s->serving) checking = true;
    }
    LWLockRelease(g_lock);
    return checking;
}

// Registers the reaper worker of `d`. On failure (no free slot) says so once, with the
// setting to raise, and leaves `d` to the next look; not while other workers of the
// launcher only check their databases (at start, every database is checked once, and a
// short wait for their slots is no shortage).
bool start_worker(Db* d) {
    BackgroundWorker worker;
    std::memset(&worker, 0, sizeof worker);
    worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
    worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
    worker.bgw_restart_time = BGW_NEVER_RESTART;
    snprintf(worker.bgw_library_name, BGW_MAXLEN, "pg_baton");
    snprintf(worker.bgw_function_name, BGW_MAXLEN, "baton_reaper_main");
    snprintf(worker.bgw_name, BGW_MAXLEN, "pg_baton reaper for database %s", d->name);
    snprintf(worker.bgw_type, BGW_MAXLEN, "pg_baton reaper");
    strlcpy(worker.bgw_extra, d->name, BGW_EXTRALEN);
    worker.bgw_main_arg = ObjectIdGetDatum(d->db);
    worker.bgw_notify_pid = MyProcPid;
    BackgroundWorkerHandle* handle = nullptr;
    MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
    bool ok = RegisterDynamicBackgroundWorker(&worker, &handle);
    MemoryContextSwitchTo(old);
    if (!ok) {
        if (g_said_no_slot || checks_in_flight()) return false;
        ereport(LOG, (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
                      errmsg("no background worker slot is free for a pg_baton reaper"),
                      errdetail("Database \"%s\" waits for one (and any other that needs a reaper); the pg_baton "
                                "launcher tries again at each interval.",
                                d->name),
                      errhint("Raise max_worker_processes (now %d) and restart the server.", max_worker_processes)));
        g_said_no_slot = true;
        return false;
    }
    if (d->handle != nullptr) pfree(d->handle);
    d->handle = handle;
    d->state = State::kRunning;
    return true;
}

// One look: the databases, the announcements, the workers that stopped, and a worker
// started for each database that needs one and is not paused.
void tick() {
    scan_databases();
    TimestampTz now = GetCurrentTimestamp();
    bool short_of_slots = false;
    HASH_SEQ_STATUS seq;
    Db* d;
    hash_seq_init(&seq, g_dbs);
    while ((d = static_cast<Db*>(hash_seq_search(&seq))) != nullptr) {
        bool paused = false;
        bool at_once = false;  // start the next worker without the retry delay
        bool absent = false;
        LWLockAcquire(g_lock, LW_EXCLUSIVE);
        Slot* s = find_slot(d->db, false);
        if (s != nullptr) {
            paused = s->paused_until > now;
            if (s->announced != d->announced) {
                d->announced = s->announced;
                if (d->state == State::kAbsent) d->state = State::kStart;
            }
        }
        if (d->state == State::kRunning && stopped(d, s)) {
            if (s != nullptr) {
                absent = s->absent && s->absent_announced == s->announced;
                // A worker that found no pg_baton before a CREATE EXTENSION announced
                // since: started again at once, not after the retry delay.
                at_once = s->stop_requested || (s->absent && !absent);
                s->absent = false;
                s->stop_requested = false;
            }
            if (absent && g_all) {
                d->state = State::kAbsent;
            } else {
                d->state = State::kRetry;
                d->retry_at = at_once ? 0 : TimestampTzPlusMilliseconds(now, kRetrySeconds * 1000);
            }
        }
        // A database that costs nothing any more leaves shared memory (a later
        // announcement takes a fresh slot, whose count starts from 0 again); not while
        // a transaction that installs pg_baton there is pending.
        if (s != nullptr && d->state == State::kAbsent && s->worker_pid == 0 && !paused &&
            !TransactionIdIsValid(s->installing)) {
            s->db = InvalidOid;
            d->announced = 0;
        }
        LWLockRelease(g_lock);

        bool due = d->state == State::kStart || (d->state == State::kRetry && d->retry_at <= now);
        if (due && !paused && !start_worker(d)) short_of_slots = true;
    }
    if (!short_of_slots) g_said_no_slot = false;
    sweep_slots(now);
}

// Records this process as the launcher in shared memory (and forgets it at exit).
void register_launcher_pid() {
    LWLockAcquire(g_lock, LW_EXCLUSIVE);
    g_shared->launcher_pid = MyProcPid;
    LWLockRelease(g_lock);
}

// before_shmem_exit callback of the launcher: it no longer runs.
void forget_launcher(int, Datum) {
    if (g_shared == nullptr) return;
    LWLockAcquire(g_lock, LW_EXCLUSIVE);
    if (g_shared->launcher_pid == MyProcPid) g_shared->launcher_pid = 0;
    LWLockRelease(g_lock);
}

// before_shmem_exit callback of a reaper worker: its database has no worker now.
void detach(int, Datum) {
    on_slot(MyDatabaseId, LW_EXCLUSIVE, [](Slot& s) {
        if (s.worker_pid == MyProcPid) s.worker_pid = 0;
    });
    wake_launcher();
}

}  // namespace

void init() {
    g_prev_request = shmem_request_hook;
    shmem_request_hook = request_shmem;
    g_prev_startup = shmem_startup_hook;
    shmem_startup_hook = startup_shmem;
    g_prev_utility = ProcessUtility_hook;
    ProcessUtility_hook = utility_hook;
    RegisterXactCallback(on_xact, nullptr);

    // No launcher in a server pg_upgrade starts (binary-upgrade mode): a reaper or a
    // schedule would change the rows the upgrade copies, even under --check.
    if (IsBinaryUpgrade) return;
    List* names = NIL;
    bool all = false;
    if (!served::database_names(false, &names, &all) || (!all && names == NIL)) return;
    BackgroundWorker worker;
    std::memset(&worker, 0, sizeof worker);
    worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
    worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
    worker.bgw_restart_time = kLauncherRestartSeconds;
    snprintf(worker.bgw_library_name, BGW_MAXLEN, "pg_baton");
    snprintf(worker.bgw_function_name, BGW_MAXLEN, "baton_launcher_main");
    snprintf(worker.bgw_name, BGW_MAXLEN, "pg_baton launcher");
    snprintf(worker.bgw_type, BGW_MAXLEN, "pg_baton launcher");
    worker.bgw_main_arg = Int32GetDatum(0);
    worker.bgw_notify_pid = 0;
    RegisterBackgroundWorker(&worker);
}

bool attach(uint32_t* announced) {
    if (g_shared == nullptr) return true;
    bool ok = true;
    LWLockAcquire(g_lock, LW_EXCLUSIVE);
    Slot* s = find_slot(MyDatabaseId, true);
    if (s != nullptr) {
        if (s->paused_until > GetCurrentTimestamp() || (s->worker_pid != 0 && s->worker_pid != MyProcPid)) {
            ok = false;
        } else {
            s->worker_pid = MyProcPid;
            s->absent = false;
            s->serving = false;
            *announced = s->announced;
        }
    }
    LWLockRelease(g_lock);
    if (ok && s != nullptr) before_shmem_exit(detach, 0);
    return ok;
}

void report_serving() {
    on_slot(MyDatabaseId, LW_EXCLUSIVE, [](Slot& s) {
        if (s.worker_pid == MyProcPid) s.serving = true;
    });
}

void report_absent(uint32_t announced, TransactionId installing) {
    on_slot(MyDatabaseId, LW_EXCLUSIVE, [&](Slot& s) {
        s.absent = true;
        s.absent_announced = announced;
        if (TransactionIdIsValid(installing)) s.installing = installing;
    });
}

void report_reaped() {
    TimestampTz now = GetCurrentTimestamp();
    on_slot(MyDatabaseId, LW_EXCLUSIVE, [&](Slot& s) {
        if (s.worker_pid == MyProcPid) s.last_reaped = now;
    });
}

bool last_reaped(Oid db, TimestampTz* at) {
    *at = 0;
    on_slot(db, LW_SHARED, [&](Slot& s) { *at = s.last_reaped; });
    return g_shared != nullptr;
}

void report_early_lease(TimestampTz lease_until) {
    on_slot(MyDatabaseId, LW_SHARED, [&](Slot& s) {
        uint64 seen = pg_atomic_read_u64(&s.early_lease);
        while (static_cast<TimestampTz>(seen) > lease_until &&
               !pg_atomic_compare_exchange_u64(&s.early_lease, &seen, static_cast<uint64>(lease_until))) {
        }
    });
}

TimestampTz early_leases(bool forget) {
    TimestampTz earliest = DT_NOBEGIN;
    on_slot(MyDatabaseId, LW_SHARED, [&](Slot& s) {
        earliest = static_cast<TimestampTz>(forget ? pg_atomic_exchange_u64(&s.early_lease, static_cast<uint64>(DT_NOEND))
                                                   : pg_atomic_read_u64(&s.early_lease));
    });
    return earliest;
}

TimestampTz purge_scan_from(TimestampTz now) {
    TimestampTz from = DT_NOBEGIN;
    on_purge_floor([&](Slot& s) {
        bool full = false;
        from = scan_floor::begin(s.purge_floor, now, s.purge_reported, &full);
        if (full) s.purge_reported = DT_NOEND;
    });
    return from;
}

void report_purge_floor(TimestampTz created_at) {
    on_purge_floor([&](Slot& s) { s.purge_reported = std::min(s.purge_reported, created_at); });
}

void purge_scanned(TimestampTz floor, TimestampTz now) {
    on_purge_floor([&](Slot& s) { scan_floor::scanned(s.purge_floor, floor, now); });
}

}  // namespace baton::pg::launcher

// The launcher's entry point: connects to no database, then looks at the databases
// every baton.reaper_interval (at most a second), and at once when woken (an
// announcement, a pause lifted, a worker that started or stopped), until SIGTERM.
void baton_launcher_main(Datum) {
    using namespace baton::pg::launcher;
    pqsignal(SIGTERM, on_sigterm);
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    BackgroundWorkerUnblockSignals();
    BackgroundWorkerInitializeConnection(nullptr, nullptr, 0);
    pgstat_report_appname("pg_baton launcher");
    MemoryContextSwitchTo(TopMemoryContext);  // the names, the table and the handles live as long

    List* names = NIL;
    bool all = false;
    (void)baton::pg::served::database_names(true, &names, &all);
    g_names = names;
    g_all = all;
    g_said_missing = static_cast<bool*>(palloc0(sizeof(bool) * (list_length(names) + 1)));
    HASHCTL info;
    std::memset(&info, 0, sizeof info);
    info.keysize = sizeof(Oid);
    info.entrysize = sizeof(Db);
    g_dbs = hash_create("pg_baton launcher databases", 64, &info, HASH_ELEM | HASH_BLOBS);
    register_launcher_pid();
    before_shmem_exit(forget_launcher, 0);
    ereport(LOG, (errmsg("pg_baton launcher started"),
                  errdetail(g_all ? "Every database in which pg_baton is installed gets its reaper."
                                  : "The databases of baton.reaper_databases get their reapers.")));

    scan_databases();
    adopt_workers();
    while (!g_terminate) {
        tick();
        int timeout = baton::settings::reaper_interval_ms;
        if (timeout > kMaxTick) timeout = kMaxTick;
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, timeout, PG_WAIT_EXTENSION);
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
        if (ConfigReloadPending) {
            ConfigReloadPending = false;
            ProcessConfigFile(PGC_SIGHUP);
        }
    }
    ereport(LOG, (errmsg("pg_baton launcher shutting down")));
    proc_exit(0);
}
