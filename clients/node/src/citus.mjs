import { fromPg } from './errors.mjs';

// The node of a Citus cluster that holds a tenant's rows, for a client that connects there
// so that the tenant's calls run on that node, without the hop through another one
// (docs/guide/scale-out.md, "Connections"). One query of Citus' metadata, which every node
// of the cluster has: the placement of the shard of baton.deliveries that holds the tenant,
// on an active primary node. The host and port are the node's as Citus knows them
// (pg_dist_node), which is how the other nodes reach it.
const NODE = `SELECT n.nodename, n.nodeport
  FROM pg_catalog.pg_dist_partition t
  JOIN pg_catalog.pg_dist_placement p
    ON p.shardid = pg_catalog.get_shard_id_for_distribution_column(t.logicalrelid, CAST($1 AS pg_catalog.uuid))
  JOIN pg_catalog.pg_dist_node n ON n.groupid = p.groupid
 WHERE t.logicalrelid = pg_catalog.to_regclass('baton.deliveries') AND t.partmethod = 'h'
   AND n.isactive AND n.noderole = 'primary'`;

// { host, port } of the node that holds the tenant's rows, or null when the server has no
// Citus (the query's undefined_table: call it outside a transaction block, which that
// error would abort) or baton.deliveries is not hash-distributed. A shard move changes
// the answer: a client that routes asks again when it reconnects.
export async function tenantNode(client, tenant) {
  let rows;
  try {
    ({ rows } = await client.query(NODE, [String(tenant)]));
  } catch (e) {
    if (e.code === '42P01') return null;
    throw fromPg(e);
  }
  return rows.length ? { host: rows[0].nodename, port: Number(rows[0].nodeport) } : null;
}
