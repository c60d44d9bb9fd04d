"""The node of a Citus cluster that holds a tenant's rows, for a client that connects there
so that the tenant's calls run on that node, without the hop through another one
(docs/guide/scale-out.md, "Connections").

    from pg_baton.citus import tenant_node
    node = tenant_node(conn, tenant)   # (host, port), or None without Citus
    if node:
        conn = psycopg.connect(host=node[0], port=node[1], dbname=..., user=...)

One query of Citus' metadata, which every node of the cluster has: the placement of the
shard of baton.deliveries that holds the tenant, on an active primary node. The host and
port are the node's as Citus knows them (pg_dist_node), which is how the other nodes reach
it. The answer is None on a server without Citus (the query's undefined_table, taken in a
savepoint when the connection is in a transaction) and when baton.deliveries is not
hash-distributed (pg_baton absent, or not distributed). A shard move changes the answer:
a client that routes asks again when it reconnects.
"""

from typing import Optional, Tuple, Union
import uuid

import psycopg
from psycopg import errors

_NODE = (
    "SELECT n.nodename, n.nodeport"
    "  FROM pg_catalog.pg_dist_partition t"
    "  JOIN pg_catalog.pg_dist_placement p"
    "    ON p.shardid = pg_catalog.get_shard_id_for_distribution_column(t.logicalrelid, CAST(%s AS pg_catalog.uuid))"
    "  JOIN pg_catalog.pg_dist_node n ON n.groupid = p.groupid"
    " WHERE t.logicalrelid = pg_catalog.to_regclass('baton.deliveries') AND t.partmethod = 'h'"
    "   AND n.isactive AND n.noderole = 'primary'"
)


def tenant_node(conn: psycopg.Connection, tenant: Union[str, uuid.UUID]) -> Optional[Tuple[str, int]]:
    """The (host, port) of the node that holds the tenant's rows, or None when the server
    has no Citus or baton.deliveries is not distributed."""
    try:
        with conn.transaction():
            row = conn.execute(_NODE, (str(tenant),)).fetchone()
    except errors.UndefinedTable:
        return None
    return (row[0], int(row[1])) if row else None
