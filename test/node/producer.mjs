// The producer and the errors (test/node/run.sh): prints one line per check.
import pg from 'pg';
import {
  DuplicateKey, InvalidArgument, LeaseLost, Producer, TenantNotWritable, fromPg, isServerError, isUuid, query,
} from 'pg-baton';

const [tenant] = process.argv.slice(2);
const client = new pg.Client();
await client.connect();
const p = new Producer(client);
const a = await p.enqueue(tenant, 'np', 'p1', { payload: { n: 1 } });
console.log('id', typeof a, a === (await query(client, "SELECT id::text AS id FROM baton.deliveries WHERE dedup_key = 'p1'"))[0].id);
console.log('same', (await p.enqueue(tenant, 'np', 'p1', { payload: { n: 1 } })) === a);
try {
  await p.enqueue(tenant, 'np', 'p1', { payload: { n: 2 } });
  console.log('dup none');
} catch (e) {
  console.log('dup', e instanceof DuplicateKey, e.sqlstate, Boolean(e.detail), Boolean(e.hint));
}
const batch = await p.enqueueBatch(tenant, [
  { target: 'np', dedup_key: 'b1', payload: { n: 3 } },
  { target: 'np', dedup_key: 'p1', payload: { n: 1 } },
]);
console.log('batch', batch.length, batch[0].inserted, batch[1].id === a, batch[1].inserted);
console.log('keyed', /^[0-9]+$/.test(await p.enqueue(tenant, 'np', 'k1', { key: 'acme' })));
try {
  await p.enqueue('00000000-0000-0000-0000-00000000dead', 'np', 'x');
  console.log('fenced none');
} catch (e) {
  console.log('fenced', e instanceof TenantNotWritable, e.sqlstate);
}
try {
  await p.enqueue(tenant, 'np', 'bad', { binding: { cause: { event: 'e', schedule: 'now' } } });
  console.log('invalid none');
} catch (e) {
  console.log('invalid', e instanceof InvalidArgument, e.sqlstate);
}
const [row] = await query(client, "SELECT id, generation FROM baton.claim($1, 'np', interval '1 minute')", [tenant]);
try {
  await client.query('SELECT baton.finish($1, $2, $3)', [tenant, row.id, Number(row.generation) + 5]);
  console.log('lost none');
} catch (e) {
  const err = fromPg(e);
  console.log('lost', err.name, err instanceof LeaseLost, err.sqlstate, isServerError(e));
}
// A lost connection's system error carries a code but is no server error.
const epipe = Object.assign(new Error('write EPIPE'), { code: 'EPIPE', errno: -32, syscall: 'write' });
console.log('epipe', isServerError(epipe), fromPg(epipe) === epipe);
console.log('uuid', isUuid(tenant.toUpperCase()), isUuid(`${tenant}0`), isUuid(null));
await client.end();
