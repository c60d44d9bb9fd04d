// Wake-ups relayed between the nodes of a distributed install (see relay.hpp).
#include <cstring>

#include <libpq-fe.h>

#include "pg/runtime/notify.hpp"
#include "pg/runtime/postgres.hpp"
#include "pg/workers/logged.hpp"
#include "pg/workers/relay.hpp"

namespace baton::pg::relay {

namespace {

constexpr int kMaxNodes = 64;
constexpr int kHostBytes = 256;
constexpr long kRefreshMs = 5000;  // how often the node list is read again
constexpr long kRetryMs = 10000;   // how long after a failed connection another is tried
constexpr int kBatch = 256;        // channel names sent again in one transaction

struct Node {
    char host[kHostBytes];
    int port;
    PGconn* conn;      // nullptr: not connected
    bool said_failed;  // the failure to connect was logged (once until it connects)
    TimestampTz retry_at;  // after a failed connection, no other before then (a connection
                           // waits up to connect_timeout, and the reaper waits with it)
};

Node g_nodes[kMaxNodes];
int g_nnodes = 0;
char g_listened[notify::kChannelBytes] = "";  // the relay channel the connections listen to
TimestampTz g_next_refresh = 0;

// What refresh() read in its transaction: the other nodes and the relay channel ("" when
// this is not a distributed install of pg_baton).
Node g_wanted[kMaxNodes];
int g_nwanted = 0;
char g_relay[notify::kChannelBytes] = "";
char g_dbname[NAMEDATALEN] = "";  // this database's name, and the bootstrap superuser's:
char g_user[NAMEDATALEN] = "";    // whom the connections log in as, where

// Reads Citus' metadata and the secret into g_wanted and g_relay. Inside a transaction;
// may raise an error.
void read_wanted() {
    g_nwanted = 0;
    g_relay[0] = '\0';
    strlcpy(g_dbname, get_database_name(MyDatabaseId), sizeof g_dbname);
    strlcpy(g_user, GetUserNameFromId(BOOTSTRAP_SUPERUSERID, false), sizeof g_user);
    if (!OidIsValid(get_extension_oid("citus", true)) || !OidIsValid(get_extension_oid("pg_baton", true))) return;
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_baton relay: SPI_connect failed");
    int rc = SPI_execute(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition WHERE logicalrelid OPERATOR(pg_catalog.=) "
        "pg_catalog.to_regclass('baton.deliveries'))",
        true, 1);
    bool isnull = true;
    bool distributed = rc == SPI_OK_SELECT && SPI_processed == 1 &&
                       DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)) && !isnull;
    if (distributed) {
        rc = SPI_execute("SELECT k.secret FROM baton.wakeup_key k", true, 1);
        Datum d = rc == SPI_OK_SELECT && SPI_processed == 1
                      ? SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)
                      : static_cast<Datum>(0);
        bytea* secret = isnull ? nullptr : DatumGetByteaPP(d);
        if (secret != nullptr) {
            const unsigned char* parts[1] = {reinterpret_cast<const unsigned char*>(notify::kRelayMessage)};
            int lens[1] = {static_cast<int>(sizeof notify::kRelayMessage - 1)};
            if (!notify::hmac_name(reinterpret_cast<const unsigned char*>(VARDATA_ANY(secret)),
                                   static_cast<int>(VARSIZE_ANY_EXHDR(secret)), parts, lens, 1, g_relay))
                g_relay[0] = '\0';
        }
    }
    if (g_relay[0] != '\0') {
        rc = SPI_execute(
            "SELECT n.nodename, n.nodeport FROM pg_catalog.pg_dist_node n, pg_catalog.pg_dist_local_group g "
            "WHERE n.isactive AND n.noderole OPERATOR(pg_catalog.=) 'primary' "
            "AND n.groupid OPERATOR(pg_catalog.<>) g.groupid ORDER BY n.nodename, n.nodeport",
            true, kMaxNodes);
        if (rc != SPI_OK_SELECT) elog(ERROR, "pg_baton relay: reading pg_dist_node failed: %s", SPI_result_code_string(rc));
        for (uint64 i = 0; i < SPI_processed; i++) {
            char* host = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
            char* port = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
            if (host == nullptr || port == nullptr || std::strlen(host) >= kHostBytes) continue;
            Node& n = g_wanted[g_nwanted++];
            strlcpy(n.host, host, sizeof n.host);
            n.port = pg_strtoint32(port);
            n.conn = nullptr;
            n.said_failed = false;
            n.retry_at = 0;
        }
    }
    SPI_finish();
}

// A value of a connection string, quoted.
void append_value(StringInfo s, const char* key, const char* value) {
    appendStringInfo(s, " %s='", key);
    for (const char* c = value; *c != '\0'; c++) {
        if (*c == '\'' || *c == '\\') appendStringInfoChar(s, '\\');
        appendStringInfoChar(s, *c);
    }
    appendStringInfoChar(s, '\'');
}

// Connects to n as the bootstrap superuser, with Citus' own connection settings
// (citus.node_conninfo: its TLS and authentication), and listens to the relay channel.
void connect(Node& n) {
    StringInfoData info;
    initStringInfo(&info);
    const char* citus_conninfo = GetConfigOption("citus.node_conninfo", true, false);
    if (citus_conninfo != nullptr) appendStringInfoString(&info, citus_conninfo);
    append_value(&info, "host", n.host);
    appendStringInfo(&info, " port=%d", n.port);
    append_value(&info, "dbname", g_dbname);
    append_value(&info, "user", g_user);
    append_value(&info, "application_name", kApplicationName);
    appendStringInfoString(&info, " connect_timeout=2");
    PGconn* conn = PQconnectdb(info.data);
    pfree(info.data);
    if (PQstatus(conn) == CONNECTION_OK) {
        char listen[32 + notify::kChannelBytes];
        snprintf(listen, sizeof listen, "LISTEN %s", g_listened);
        PGresult* r = PQexec(conn, listen);
        bool listening = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        if (listening) {
            n.conn = conn;
            if (n.said_failed)
                ereport(LOG, (errmsg("pg_baton relay connected to node %s:%d", n.host, n.port)));
            n.said_failed = false;
            return;
        }
    }
    if (!n.said_failed)
        ereport(LOG, (errmsg("pg_baton relay cannot listen on node %s:%d: %s", n.host, n.port,
                             PQerrorMessage(conn)),
                      errhint("Wake-ups of enqueues on that node reach listeners on this node only at their "
                              "fallback poll until it connects; it tries again every few seconds.")));
    n.said_failed = true;
    n.retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), kRetryMs);
    PQfinish(conn);
}

void disconnect(Node& n) {
    if (n.conn != nullptr) PQfinish(n.conn);
    n.conn = nullptr;
}

// Sends the names again on this node, in one transaction.
void send(char (*names)[notify::kChannelBytes], int n) {
    struct Names {
        char (*names)[notify::kChannelBytes];
        int n;
    } batch{names, n};
    (void)workers::logged([](void* p) {
        auto* b = static_cast<Names*>(p);
        SetCurrentStatementStartTimestamp();
        StartTransactionCommand();
        for (int i = 0; i < b->n; i++) Async_Notify(b->names[i], nullptr);
        CommitTransactionCommand();
    }, &batch);
}

// Reads what n's connection has received and sends each channel named again; a
// connection that failed is closed (refresh() connects again).
void drain(Node& n) {
    static char names[kBatch][notify::kChannelBytes];
    int count = 0;
    if (PQconsumeInput(n.conn) == 0) {
        ereport(LOG, (errmsg("pg_baton relay lost its connection to node %s:%d: %s", n.host, n.port,
                             PQerrorMessage(n.conn))));
        disconnect(n);
        g_next_refresh = 0;
        return;
    }
    while (PGnotify* note = PQnotifies(n.conn)) {
        if (notify::is_channel_name(note->extra)) {
            std::memcpy(names[count++], note->extra, notify::kChannelBytes);
            if (count == kBatch) {
                send(names, count);
                count = 0;
            }
        }
        PQfreemem(note);
    }
    if (count > 0) send(names, count);
}

}  // namespace

void refresh() {
    TimestampTz now = GetCurrentTimestamp();
    if (now < g_next_refresh) return;
    g_next_refresh = TimestampTzPlusMilliseconds(now, kRefreshMs);
    bool read = workers::logged([](void*) {
        SetCurrentStatementStartTimestamp();
        StartTransactionCommand();
        PushActiveSnapshot(GetTransactionSnapshot());
        read_wanted();
        PopActiveSnapshot();
        CommitTransactionCommand();
    }, nullptr);
    if (!read) return;
    // Another relay channel (a new secret, or none): every connection listens again.
    if (std::strcmp(g_relay, g_listened) != 0) {
        for (int i = 0; i < g_nnodes; i++) disconnect(g_nodes[i]);
        g_nnodes = 0;
        strlcpy(g_listened, g_relay, sizeof g_listened);
    }
    // The nodes wanted, each with its connection if it had one.
    Node next[kMaxNodes];
    for (int w = 0; w < g_nwanted; w++) {
        next[w] = g_wanted[w];
        for (int i = 0; i < g_nnodes; i++)
            if (g_nodes[i].port == next[w].port && std::strcmp(g_nodes[i].host, next[w].host) == 0) {
                next[w] = g_nodes[i];
                g_nodes[i].conn = nullptr;  // moved
            }
    }
    for (int i = 0; i < g_nnodes; i++) disconnect(g_nodes[i]);  // the nodes gone
    for (int w = 0; w < g_nwanted; w++) g_nodes[w] = next[w];
    g_nnodes = g_nwanted;
    for (int i = 0; i < g_nnodes; i++)
        if (g_nodes[i].conn == nullptr && now >= g_nodes[i].retry_at) connect(g_nodes[i]);
}

void wait(long timeout_ms) {
    TimestampTz end = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);
    for (;;) {
        long left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), end);
        if (left <= 0) return;
        // A connection that broke without a read noticing it has no socket to wait on.
        for (int i = 0; i < g_nnodes; i++)
            if (g_nodes[i].conn != nullptr && (PQstatus(g_nodes[i].conn) != CONNECTION_OK || PQsocket(g_nodes[i].conn) < 0)) {
                disconnect(g_nodes[i]);
                g_next_refresh = 0;
            }
        WaitEventSet* set = compat::wait_event_set(2 + g_nnodes);
        AddWaitEventToSet(set, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, nullptr);
        AddWaitEventToSet(set, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, nullptr, nullptr);
        for (int i = 0; i < g_nnodes; i++)
            if (g_nodes[i].conn != nullptr)
                AddWaitEventToSet(set, WL_SOCKET_READABLE, PQsocket(g_nodes[i].conn), nullptr, &g_nodes[i]);
        WaitEvent events[2 + kMaxNodes];
        int n = WaitEventSetWait(set, left, events, 2 + g_nnodes, PG_WAIT_EXTENSION);
        FreeWaitEventSet(set);
        bool latch = false;
        for (int i = 0; i < n; i++) {
            if (events[i].events & WL_LATCH_SET) latch = true;
            Node* node = static_cast<Node*>(events[i].user_data);
            if ((events[i].events & WL_SOCKET_READABLE) && node != nullptr && node->conn != nullptr) drain(*node);
        }
        if (latch || n == 0) return;
        CHECK_FOR_INTERRUPTS();
    }
}

}  // namespace baton::pg::relay
