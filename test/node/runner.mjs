// The workflow runner (test/node/run.sh): `walk` walks every run of node_flow and prints
// what the handlers did; `doomed` dies inside a marked action (the marker stays claimed);
// `heir` takes the run over and prints whether the marker was in doubt; `dup` walks a run
// of node_dup whose handler's enqueue is refused (DuplicateKey) on its first attempt and
// prints how runNext ended; `proto` walks a run of node_proto, whose stage `constructor`
// has no handler, and prints how runNext ended.
import pg from 'pg';
import { InDoubt, Producer, Runner } from 'pg-baton';

const [mode, tenant] = process.argv.slice(2);
const client = new pg.Client();
await client.connect();

if (mode === 'walk') {
  const calls = { a: 0, b: 0, mail: 0 };
  const a = async (stage) => {
    calls.a += 1;
    const mail = async () => { calls.mail += 1; };
    await stage.once(0, 'mail', mail);
    await stage.once(0, 'mail', mail); // the same marker again: not run twice
    return { mailed: true };
  };
  const b = async (stage) => {
    calls.b += 1;
    if (stage.attempt === 1) throw new Error('first attempt fails');
    return { done: stage.inputs };
  };
  const runner = new Runner(client, tenant, 'node_flow', 'node-runner', { a, b }, { lease: 30, retryIn: 0 });
  let walked = 0;
  while (await runner.runNext()) walked += 1;
  console.log('walked', walked, 'calls', calls.a, calls.b, calls.mail);
} else if (mode === 'doomed') {
  const a = async (stage) => { await stage.once(0, 'mail', () => process.exit(9)); }; // dies with the marker claimed
  await new Runner(client, tenant, 'node_flow', 'node-doomed', { a, b: a }, { lease: 1 }).runNext();
} else if (mode === 'heir') {
  const ran = [];
  const a = async (stage) => { await stage.once(0, 'mail', () => { ran.push(1); }); return {}; };
  try {
    await new Runner(client, tenant, 'node_flow', 'node-heir', { a, b: a }, { lease: 30 }).runNext();
    console.log('no doubt', ran.length);
  } catch (e) {
    console.log(e instanceof InDoubt ? 'in doubt' : `other ${e}`, ran.length, Boolean(e.hint));
  }
} else if (mode === 'dup' || mode === 'proto') {
  const a = async (stage) => {
    if (stage.attempt === 1) await new Producer(client).enqueue(tenant, 'nd', 'dup', { payload: { n: 2 } });
    return { attempt: stage.attempt };
  };
  const runner = new Runner(client, tenant, `node_${mode}`, `node-${mode}`, { a }, { lease: 30, retryIn: 60 });
  try {
    console.log('resolved', /^[0-9a-f-]{36}$/.test(await runner.runNext()));
  } catch (e) {
    console.log('rejected', e.name, e.message);
  }
}
await client.end();
