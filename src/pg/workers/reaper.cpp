// The background reaper (see reaper.hpp).
//
// The worker is plain Postgres code: no C++ object with a destructor lives in it, so a
// Postgres error may longjmp anywhere in it. Each batch runs in its own transaction
// under PG_TRY; an error is logged, the transaction aborted, and the loop goes on at the
// next interval, so one bad batch never takes the worker down. SIGTERM (shutdown,
// pg_terminate_backend, or a command that needs the database: launcher.hpp) ends the loop
// and the worker exits with status 0. The launcher starts the workers (dynamic, never
// restarted by the postmaster) and starts another after a worker stops (launcher.cpp).
#include <csignal>
#include <cstring>

#include "core/limits.hpp"
#include "core/scan_floor.hpp"
#include "pg/workers/launcher.hpp"
#include "pg/workers/logged.hpp"
#include "pg/runtime/owner.hpp"
#include "pg/runtime/schema_version.hpp"
#include "pg/runtime/postgres.hpp"
#include "pg/runtime/settings.hpp"
#include "pg/workers/reaper.hpp"
#include "pg/workers/relay.hpp"
#include "pg/workers/served.hpp"
#include "pg/workers/side_vacuum.hpp"

namespace baton::pg::reaper {

namespace {

volatile sig_atomic_t g_terminate = false;

// The scan floor of this worker's reap calls (core/scan_floor.hpp): its state, whether
// this process is the reaper, the current batch's floor, and whether its reap call
// reported what it found.
scan_floor::State g_floor;
bool g_in_reaper = false;
TimestampTz g_scan_from = DT_NOBEGIN;
bool g_scanned = false;

// SIGTERM: ends the loop at its next check; the latch wakes a sleeping worker.
void on_sigterm(SIGNAL_ARGS) {
    int saved_errno = errno;
    g_terminate = true;
    SetLatch(MyLatch);
    errno = saved_errno;
}

// Whether this database's pg_baton is in use (baton.in_use has its row). One that is not
// (a restore in progress, or a database no application has written to since) is left
// alone: a reap is a write and would end the restore's way past the fence
// (restore_load.hpp). A schema baton without the table is not pg_baton's own (its owner,
// who owns the schema, may put another in its place): the job is called there all the
// same, as the owner, with no more rights than the owner has. Inside SPI.
bool in_use() {
    Oid nsp = get_namespace_oid("baton", true);
    if (!OidIsValid(nsp) || !OidIsValid(get_relname_relid("in_use", nsp))) return true;
    int rc = SPI_execute("SELECT 1 FROM baton.in_use", true, 1);
    if (rc != SPI_OK_SELECT) elog(ERROR, "pg_baton reaper: reading baton.in_use failed: %s", SPI_result_code_string(rc));
    return SPI_processed > 0;
}

constexpr int kNotInstalled = -1;
constexpr int kReadOnly = -2;
constexpr int kOlderSchema = -3;

// The installed version run_batch() last found older than the library's.
char g_older_version[NAMEDATALEN];

// What the worker calls each round: a function of baton taking the batch size and
// returning a count.
struct Job {
    const char* function;  // its name in schema baton
    const char* call;      // the statement
};
constexpr Job kReap = {"reap", "SELECT baton.reap($1)"};
constexpr Job kFire = {"fire_schedules", "SELECT baton.fire_schedules($1)"};
constexpr Job kAge = {"age_pending", "SELECT baton.age_pending($1)"};
constexpr Job kFlush = {"flush_counts", "SELECT baton.flush_counts() WHERE $1 OPERATOR(pg_catalog.>=) 0"};

// One batch in its own transaction: SELECT baton.reap(batch), or another job, through
// SPI (so the call runs exactly as a client's would, as the extension's owner, under
// the fence). Returns the count (rows reaped, deliveries fired; 0 while the database is
// not in use), kNotInstalled when pg_baton is not installed in this database,
// kOlderSchema when its schema is older than the library's (g_older_version: the call
// would refuse with 55000 until ALTER EXTENSION pg_baton UPDATE), or kReadOnly when
// transactions are read-only here (default_transaction_read_only set for the server,
// the database or the role): the call would refuse with 25006. In those cases the worker
// does not make the call and says so once instead of logging an error each round. (On
// a standby the worker does not run at all: it starts when recovery has finished.)
int run_batch(const Job& job, int batch) {
    int count = kNotInstalled;
    SetCurrentStatementStartTimestamp();
    StartTransactionCommand();
    PushActiveSnapshot(GetTransactionSnapshot());
    pgstat_report_activity(STATE_RUNNING, job.call);
    Oid owner = XactReadOnly ? InvalidOid : owner::of_extension(true);
    const char* older = OidIsValid(owner) ? schema_version::older_installed() : nullptr;
    if (XactReadOnly) {
        count = kReadOnly;
    } else if (older != nullptr) {
        strlcpy(g_older_version, older, sizeof g_older_version);
        count = kOlderSchema;
    } else if (OidIsValid(owner)) {
        // The worker connects as the bootstrap superuser; it reads and reaps as the
        // extension's owner, as every pg_baton call runs (owner.hpp), so that nothing it
        // runs has more rights than the role that installed pg_baton. An error leaves
        // the switch back to the transaction abort.
        Oid saved_user = InvalidOid;
        int saved_context = 0;
        GetUserIdAndSecContext(&saved_user, &saved_context);
        SetUserIdAndSecContext(owner, saved_context | SECURITY_LOCAL_USERID_CHANGE);
        Oid argtypes[1] = {INT4OID};
        Datum values[1] = {Int32GetDatum(batch)};
        if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_baton reaper: SPI_connect failed");
        count = 0;
        if (in_use()) {
            int rc = SPI_execute_with_args(job.call, 1, argtypes, values, nullptr, false, 1);
            if (rc != SPI_OK_SELECT || SPI_processed != 1)
                elog(ERROR, "pg_baton reaper: baton.%s() failed: %s", job.function, SPI_result_code_string(rc));
            bool isnull = false;
            Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
            count = isnull ? 0 : DatumGetInt32(d);
        }
        SPI_finish();
        SetUserIdAndSecContext(saved_user, saved_context);
    }
    PopActiveSnapshot();
    CommitTransactionCommand();
    pgstat_report_stat(false);
    pgstat_report_activity(STATE_IDLE, nullptr);
    return count;
}

// Runs one batch and catches its error: logs it, aborts the transaction and returns
// false, so that the worker survives (a cancel, a lock timeout, a dropped extension).
bool try_batch(const Job& job, int batch, int* count) {
    struct Call {
        const Job* job;
        int batch;
        int* count;
    } call{&job, batch, count};
    return workers::logged([](void* p) {
        auto* c = static_cast<Call*>(p);
        *c->count = run_batch(*c->job, c->batch);
    }, &call);
}

// Whether a dirty snapshot sees pg_baton's row of pg_extension: committed (*installing
// left invalid), or inserted by a transaction that has not ended (*installing its xid:
// one in progress, or one prepared for two-phase commit and awaiting its COMMIT
// PREPARED, perhaps since before a restart). In a transaction of its own.
bool seen_installing(TransactionId* installing) {
    *installing = InvalidTransactionId;
    SetCurrentStatementStartTimestamp();
    StartTransactionCommand();
    SnapshotData dirty;
    InitDirtySnapshot(dirty);
    Relation rel = table_open(ExtensionRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ, CStringGetDatum("pg_baton"));
    SysScanDesc scan = systable_beginscan(rel, ExtensionNameIndexId, true, &dirty, 1, &key);
    bool seen = HeapTupleIsValid(systable_getnext(scan));
    if (seen) *installing = dirty.xmin;
    systable_endscan(scan);
    table_close(rel, AccessShareLock);
    CommitTransactionCommand();
    return seen;
}

// The rest after a full batch that began at `start`: as long as the batch took, at least
// kMinPauseMs, at most the round's interval, relaying wake-ups meanwhile.
constexpr long kMinPauseMs = 10;
void pause(TimestampTz start) {
    long took_ms = static_cast<long>((GetCurrentTimestamp() - start) / 1000);
    long ms = took_ms < kMinPauseMs ? kMinPauseMs : took_ms;
    if (ms > baton::settings::reaper_interval_ms) ms = baton::settings::reaper_interval_ms;
    relay::wait(ms);
    ResetLatch(MyLatch);
}

// A reap batch: where its scan starts (a full scan forgets the writers' reports first,
// before the batch's snapshot), then the batch, then the floor moved by what it found,
// or a full scan next when it found nothing to report (it failed, or did not reap).
bool try_reap(int batch, int* count) {
    bool full = false;
    g_scan_from = scan_floor::begin(g_floor, GetCurrentTimestamp(), launcher::early_leases(false), &full);
    if (full) (void)launcher::early_leases(true);
    g_scanned = false;
    bool ok = try_batch(kReap, batch, count);
    if (!ok || !g_scanned) scan_floor::forget(g_floor);
    return ok;
}

}  // namespace

TimestampTz scan_from() { return g_in_reaper ? g_scan_from : DT_NOBEGIN; }

void scanned(TimestampTz oldest, TimestampTz now) {
    if (!g_in_reaper) return;
    scan_floor::scanned(g_floor, oldest, now);
    g_scanned = true;
}

}  // namespace baton::pg::reaper

// The worker's entry point: connects to its database (by oid: the launcher passes it),
// then reaps every interval until SIGTERM. With baton.reaper_databases = '*' it exits
// when pg_baton is not installed there (at once, quietly, when it never was; after
// saying so, when DROP EXTENSION removed it), and the launcher forgets the database
// until a CREATE EXTENSION there commits, or until the transaction it saw installing
// pg_baton (a prepared one) ends. With a list of names it waits instead (and says so
// once).
void baton_reaper_main(Datum arg) {
    using namespace baton::pg;
    using namespace baton::pg::reaper;
    char dbname[NAMEDATALEN];
    strlcpy(dbname, MyBgworkerEntry->bgw_extra, sizeof dbname);

    pqsignal(SIGTERM, on_sigterm);
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    BackgroundWorkerUnblockSignals();
    BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(arg), InvalidOid, 0);
    pgstat_report_appname("pg_baton reaper");
    g_in_reaper = true;
    // The reaper's statements read pg_baton's tables by their indexes, from the scan
    // floor up: a sequential scan (the plan a small table gets) reads every row a
    // transaction held open keeps dead, in every round.
    SetConfigOption("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION);
    uint32_t announced = 0;
    if (!launcher::attach(&announced)) {
        // Paused by a command that needs the database (DROP DATABASE, ...), or another
        // worker runs there already.
        elog(DEBUG1, "pg_baton reaper for database \"%s\" not needed now", dbname);
        proc_exit(0);
    }
    List* names = NIL;
    bool all = false;
    (void)served::database_names(true, &names, &all);
    if (!all) {
        launcher::report_serving();
        ereport(LOG, (errmsg("pg_baton reaper started in database \"%s\"", dbname)));
    }

    bool said_missing = false;
    bool said_read_only = false;
    bool said_older = false;
    bool reaping = false;  // pg_baton was found installed
    while (!g_terminate) {
        // A round: batch after batch, one transaction each, until one comes back short.
        // After a full batch the worker rests as long as the batch took (pause()), so that
        // a burst of expired leases is returned at most at half the pace one process
        // could, and the claims that run meanwhile keep their share of the server.
        bool fire = false;  // pg_baton is installed and writable: fire schedules after reaping
        TimestampTz batch_start = 0;
        for (;;) {
            if (batch_start != 0) pause(batch_start);
            CHECK_FOR_INTERRUPTS();
            if (g_terminate) break;
            int batch = baton::settings::reaper_batch;
            int reaped = 0;
            batch_start = GetCurrentTimestamp();
            if (!try_reap(batch, &reaped)) break;
            if (reaped == kNotInstalled && all) {
                // Installed and committed since the batch looked: reaped at the next round.
                TransactionId installing = InvalidTransactionId;
                if (seen_installing(&installing) && !TransactionIdIsValid(installing)) break;
                if (reaping)
                    ereport(LOG, (errmsg("pg_baton is no longer installed in database \"%s\"; its reaper exits",
                                         dbname)));
                else
                    elog(DEBUG1, "pg_baton is not installed in database \"%s\"; no reaper there", dbname);
                launcher::report_absent(announced, installing);
                proc_exit(0);
            }
            if (!reaping && reaped != kNotInstalled && all) {
                launcher::report_serving();
                ereport(LOG, (errmsg("pg_baton reaper started in database \"%s\"", dbname)));
            }
            if (reaped != kNotInstalled) reaping = true;
            if (reaped >= 0) launcher::report_reaped();
            if (reaped == kReadOnly) {
                if (!said_read_only)
                    ereport(LOG, (errmsg("transactions are read-only in database \"%s\"; the pg_baton reaper waits",
                                         dbname),
                                  errhint("The reaper reaps again once default_transaction_read_only is off "
                                          "for it.")));
                said_read_only = true;
                break;
            }
            if (said_read_only)
                ereport(LOG, (errmsg("transactions are read-write in database \"%s\"; the pg_baton reaper reaps "
                                     "again", dbname)));
            said_read_only = false;
            if (reaped == kOlderSchema) {
                if (!said_older)
                    ereport(LOG, (errmsg("pg_baton in database \"%s\" is at version %s, older than its library's "
                                         "version %s; the pg_baton reaper waits",
                                         dbname, g_older_version, schema_version::library()),
                                  errhint("Run ALTER EXTENSION pg_baton UPDATE in database \"%s\".", dbname)));
                said_older = true;
                break;
            }
            if (said_older)
                ereport(LOG, (errmsg("pg_baton in database \"%s\" is at the library's version; the pg_baton reaper "
                                     "reaps again", dbname)));
            said_older = false;
            if (reaped == kNotInstalled) {
                if (!said_missing)
                    ereport(LOG, (errmsg("pg_baton is not installed in database \"%s\"; its reaper waits", dbname),
                                  errhint("Run CREATE EXTENSION pg_baton there, or remove the database from "
                                          "baton.reaper_databases.")));
                said_missing = true;
                break;
            }
            if (said_missing)
                ereport(LOG, (errmsg("pg_baton is installed in database \"%s\"; its reaper starts reaping", dbname)));
            said_missing = false;
            if (reaped > 0) elog(DEBUG1, "pg_baton reaper reaped %d expired leases in \"%s\"", reaped, dbname);
            fire = true;
            if (reaped < batch) break;
        }
        // Then the due schedules, batch after batch until one comes back short.
        while (fire && !g_terminate) {
            CHECK_FOR_INTERRUPTS();
            int fired = 0;
            if (!try_batch(kFire, baton::settings::reaper_batch, &fired) || fired < 0) break;
            if (fired > 0) elog(DEBUG1, "pg_baton reaper fired %d schedules in \"%s\"", fired, dbname);
            if (fired < baton::settings::reaper_batch) break;
        }
        if (g_terminate) break;
        // Then one batch of the deliveries that wait too long behind higher priorities.
        if (fire && baton::settings::priority_aging > 0) {
            int aged = 0;
            if (try_batch(kAge, baton::settings::reaper_batch, &aged) && aged > 0)
                elog(DEBUG1, "pg_baton reaper raised %d deliveries' priorities in \"%s\"", aged, dbname);
        }
        if (g_terminate) break;
        // Then the counts of this round's commits into baton.event_counts.
        if (fire) {
            int flushed = 0;
            (void)try_batch(kFlush, 0, &flushed);
        }
        if (g_terminate) break;
        // Then the side tables of deliveries, vacuumed when autovacuum's rule says so.
        if (fire) (void)side_vacuum::run();
        if (g_terminate) break;
        // The wait relays the wake-ups of the other nodes of a distributed install.
        relay::refresh();
        relay::wait(baton::settings::reaper_interval_ms);
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
        if (ConfigReloadPending) {
            ConfigReloadPending = false;
            ProcessConfigFile(PGC_SIGHUP);
        }
    }
    // The counts committed since the last round, kept across a clean stop.
    if (reaping) {
        int flushed = 0;
        (void)try_batch(kFlush, 0, &flushed);
    }
    ereport(LOG, (errmsg("pg_baton reaper in database \"%s\" shutting down", dbname)));
    proc_exit(0);
}
