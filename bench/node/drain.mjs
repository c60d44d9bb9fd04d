// Measures how fast a backlog drains, from the tables, for bench/run.sh.
//
//   node drain.mjs --sql 'SELECT ... AS n' --backlog B [--from 0.1] [--to 0.9]
//                  [--max-secs S] [--every-ms 50] -- COMMAND ARGS...
//
// Starts COMMAND (the workers: pgbench, or `node peer.mjs work ...`), and every EVERY ms
// runs SQL (one row, one column: the items worked so far, counted from the queue's own
// tables) on its own connection. The window starts at the first sample at or past
// FROM x B worked (so connection set-up and start-up are left out) and ends at the first
// sample at or past TO x B, or MAX seconds after the window started, whichever comes
// first. Then COMMAND gets SIGTERM (SIGKILL 5 s later). Prints one line:
//   items secs
// (the items worked inside the window and its length); exits 2 if COMMAND ended before
// the window closed or the backlog never reached FROM within MAX + 30 s.
import { spawn } from 'node:child_process';
import pg from 'pg';

function die(msg) {
  console.error(`drain.mjs: ${msg}`);
  process.exit(2);
}

const argv = process.argv.slice(2);
const dash = argv.indexOf('--');
if (dash < 0 || dash === argv.length - 1) die('usage: drain.mjs --sql SQL --backlog B [...] -- COMMAND ARGS...');
const opts = { from: 0.1, to: 0.9, 'max-secs': 10, 'every-ms': 50 };
for (let i = 0; i < dash; i += 2) {
  const key = argv[i].replace(/^--/, '');
  if (!(key in opts) && key !== 'sql' && key !== 'backlog') die(`unknown option ${argv[i]}`);
  opts[key] = key === 'sql' ? argv[i + 1] : Number(argv[i + 1]);
}
const [cmd, ...args] = argv.slice(dash + 1);
const backlog = opts.backlog;
if (!opts.sql || !(backlog > 0)) die('--sql and --backlog are required');

const client = new pg.Client({ application_name: 'bench-drain' });
await client.connect();
const count = async () => Number((await client.query(opts.sql)).rows[0].n);

const base = await count();
const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'inherit'] });
let exited = null;
child.on('exit', (code, signal) => {
  exited = { code, signal };
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const lo = opts.from * backlog;
const hi = opts.to * backlog;
const started = performance.now();
let first = null;
let last = null;
for (;;) {
  await sleep(opts['every-ms']);
  const t = performance.now();
  const n = (await count()) - base;
  if (exited) break;
  if (first === null) {
    if (n >= lo) first = { t, n };
    else if (t - started > (opts['max-secs'] + 30) * 1000) break;
    continue;
  }
  last = { t, n };
  if (n >= hi || t - first.t >= opts['max-secs'] * 1000) break;
}

const ended = exited;
if (!ended) {
  child.kill('SIGTERM');
  const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await new Promise((r) => (exited ? r() : child.on('exit', r)));
  clearTimeout(killer);
}
await client.end();
if (ended) die(`${cmd} ended early (code ${ended.code}, signal ${ended.signal})`);
if (first === null || last === null) die(`the backlog never reached ${lo} worked items`);
console.log(`${last.n - first.n} ${((last.t - first.t) / 1000).toFixed(3)}`);
