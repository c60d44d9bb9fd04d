// Prints bench/run.sh's table and goals from its results file.
//
//   node report.mjs RESULTS.tsv
//
// Lines of RESULTS: "group key round items secs" (tab-separated), "meta name value",
// "memory phase calls context_bytes rss_bytes". A row's rate is the median over its rounds
// of items / secs; a ratio between two rows of one group is the median of the per-round
// ratios (the rows alternate within each round, so both sides see the same noise).
import { readFileSync } from 'node:fs';

const lines = readFileSync(process.argv[2], 'utf8').split('\n').filter(Boolean);
const meta = {};
const runs = {}; // "group/key" -> Map(round -> rate)
const memory = {};
const sums = {}; // "group/key" -> Map(round -> [items, secs])
for (const line of lines) {
  const [group, key, a, b, c] = line.split('\t');
  if (group === 'meta') meta[key] = Number(a);
  else if (group === 'memory') memory[key] = { calls: Number(a), ctx: Number(b), rss: Number(c) };
  else {
    // Repeated measurements of one round (short batched runs) add up.
    const id = `${group}/${key}`;
    sums[id] ??= new Map();
    const [items, secs] = sums[id].get(Number(a)) ?? [0, 0];
    sums[id].set(Number(a), [items + Number(b), secs + Number(c)]);
  }
}

for (const [id, m] of Object.entries(sums))
  runs[id] = new Map([...m].map(([round, [items, secs]]) => [round, items / secs]));

const median = (xs) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const rate = (id) => (runs[id] ? median([...runs[id].values()]) : NaN);
// Median of per-round ratios a / (b * scale), over the rounds both have.
const ratio = (a, b, scale = 1) => {
  if (!runs[a] || !runs[b]) return NaN;
  const rs = [];
  for (const [round, v] of runs[a]) if (runs[b].has(round)) rs.push(v / (runs[b].get(round) * scale));
  return median(rs);
};
const fmtInt = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-');
const fmtRate = (n) => (Number.isFinite(n) ? (n >= 100 ? fmtInt(n) : n.toFixed(1)) : '-');
const fmtRatio = (n) => (Number.isFinite(n) ? n.toFixed(2) : '-');
const mb = (n) => `${(n / 1048576).toFixed(2)} MB`;

const rows = [];
const section = (title) => rows.push({ section: title });
// row(id, label, clients, backlog, [[otherId, name, scale], ...])
const row = (id, label, clients, backlog, cmps = []) => {
  if (!runs[id]) return;
  const ratios = cmps
    .filter(([other]) => runs[other])
    .map(([other, name, scale = 1]) => `${fmtRatio(ratio(id, other, scale))} x ${name}`);
  rows.push({
    label,
    clients: String(clients),
    backlog: typeof backlog === 'number' ? fmtInt(backlog) : backlog,
    rate: fmtRate(rate(id)),
    rounds: [...runs[id].entries()].sort((x, y) => x[0] - y[0]).map(([, v]) => fmtRate(v)).join(' '),
    ratios: ratios.join('; '),
  });
};

const small = meta.small ?? 10000;
const big = meta.big ?? 1000000;
const vacBig = meta.vac_big ?? big;
const peerBacklog = meta.peer_backlog;
const CLIENTS = [1, 4, 16, 64];

section('scale: each round on fresh tables; items = finished rows (ceiling: updates)');
for (const c of CLIENTS) {
  row(`scale/ceiling@${c}`, 'ceiling: 1 UPDATE by key per txn', c, small);
  row(`scale/plain@${c}`, 'plain SQL cycle (claim; finish)', c, small, [[`scale/ceiling@${c}`, 'ceiling/2', 0.5]]);
  const at16 = c === 64 ? [[`scale/baton@16`, '16 clients']] : [];
  row(`scale/baton@${c}`, 'pg_baton cycle (claim; finish)', c, small, [
    [`scale/plain@${c}`, 'plain SQL'],
    [`scale/ceiling@${c}`, 'ceiling/2', 0.5],
    [`scale/batonnc@${c}`, 'cache off'],
    ...at16,
  ]);
  row(`scale/batonnc@${c}`, 'pg_baton cycle, authorization cache off', c, small, [
    [`scale/plain@${c}`, 'plain SQL'],
    [`scale/ceiling@${c}`, 'ceiling/2', 0.5],
  ]);
  const b16 = c === 64 ? [[`scale/batonb@16`, '16 clients']] : [];
  row(`scale/plainb@${c}`, 'plain SQL batched (claim 50; finish 50)', c, small, [[`scale/plain@${c}`, 'plain SQL cycle']]);
  row(`scale/batonb@${c}`, 'pg_baton batched (claim 50; finish 50)', c, small, [
    [`scale/plainb@${c}`, 'plain SQL batched'],
    [`scale/baton@${c}`, 'pg_baton cycle'],
    ...b16,
  ]);
}

if (runs['layouts/plain@1']) {
  section('layouts: deliveries stored four ways, written by plain SQL, and pg_baton; fresh tables each round');
  const LAYOUTS = [
    ['plain', 'plain SQL queue'],
    ['wide', "pg_baton's layout"],
    ['split', 'lease state apart'],
    ['hybrid', 'HOT row + ready, leases'],
    ['baton', 'pg_baton'],
  ];
  for (const c of [1, 16]) {
    for (const [kind, what] of [['', 'cycle'], ['b', 'batched 50']]) {
      for (const [l, name] of LAYOUTS) {
        const vs = l === 'plain' ? [] : [[`layouts/plain${kind}@${c}`, 'plain SQL']];
        if (l !== 'plain' && l !== 'wide') vs.push([`layouts/wide${kind}@${c}`, "pg_baton's layout"]);
        row(`layouts/${l}${kind}@${c}`, `${name}: ${what}`, c, small, vs);
      }
    }
  }
}

section('backlog: 16 clients; the small side refilled each round, the big one filled once, VACUUMed before each round');
row('backlog/plain:small', 'plain SQL cycle', 16, small);
row('backlog/plain:big', 'plain SQL cycle', 16, big, [['backlog/plain:small', `${fmtInt(small)} pending`]]);
row('backlog/baton:small', 'pg_baton cycle', 16, small, [['backlog/plain:small', 'plain SQL']]);
row('backlog/baton:big', 'pg_baton cycle', 16, big, [
  ['backlog/baton:small', `${fmtInt(small)} pending`],
  ['backlog/plain:big', 'plain SQL'],
]);
row('backlog/batonb:small', 'pg_baton batched (50)', 16, small);
row('backlog/batonb:big', 'pg_baton batched (50)', 16, big, [['backlog/batonb:small', `${fmtInt(small)} pending`]]);

section('peers: drain of one backlog by 16 workers, items worked between 10% and 90% of it, from the tables');
row('peers/baton', 'pg_baton cycle', 16, peerBacklog, [
  ['peers/gw', 'graphile-worker'],
  ['peers/boss', 'pg-boss'],
  ['peers/plain', 'plain SQL'],
]);
row('peers/plain', 'plain SQL cycle', 16, peerBacklog);
row('peers/gw', 'graphile-worker 0.18, unbatched', 16, peerBacklog);
row('peers/boss', 'pg-boss 12, unbatched (batchSize 1)', 16, peerBacklog);
row('peers/batonb', 'pg_baton batched (claim 50; finish 50)', 16, peerBacklog, [
  ['peers/gwb', 'graphile-worker batched'],
  ['peers/bossb', 'pg-boss batched'],
  ['peers/plainb', 'plain SQL batched'],
]);
row('peers/batonb500', 'pg_baton batched (claim 500; finish 500)', 16, peerBacklog, [
  ['peers/gwb', 'graphile-worker batched (local queue 500)'],
  ['peers/bossb', 'pg-boss batched'],
  ['peers/batonb', 'pg_baton batched 50'],
]);
row('peers/plainb', 'plain SQL batched (50)', 16, peerBacklog);
row('peers/gwb', 'graphile-worker, localQueue 500, batched completion', 16, peerBacklog);
row('peers/bossb', 'pg-boss, batchSize 50', 16, peerBacklog);

const enqBacklog = meta.enq_backlog ?? 200000;
section('enqueue: the same backlog afresh through each system\'s bulk API, 10,000 items a call (items/s)');
row('enqueue/baton', 'pg_baton enqueue_batch (Node.js client, JSON parameter)', 1, enqBacklog, [
  ['enqueue/graphile', 'graphile-worker addJobs'],
  ['enqueue/pgboss', 'pg-boss insert'],
  ['enqueue/floor', 'the floor'],
]);
row('enqueue/literal', 'pg_baton enqueue_batch (psql, JSON literal)', 1, enqBacklog, [
  ['enqueue/graphile', 'graphile-worker addJobs'],
  ['enqueue/baton', 'Node.js client'],
]);
row('enqueue/batonsql', 'pg_baton enqueue_batch (JSON built by the statement)', 1, enqBacklog, [
  ['enqueue/graphile', 'graphile-worker addJobs'],
  ['enqueue/floor', 'the floor'],
  ['enqueue/baton', 'Node.js client'],
]);
row('enqueue/staged', 'pg_baton for millions: \\copy, one statement', 1, enqBacklog, [
  ['enqueue/graphile', 'graphile-worker addJobs'],
  ['enqueue/floor', 'the floor'],
  ['enqueue/baton', 'enqueue_batch'],
]);
row('enqueue/graphile', 'graphile-worker addJobs', 1, enqBacklog);
row('enqueue/pgboss', 'pg-boss insert', 1, enqBacklog);
row('enqueue/floor', 'floor: plain INSERT ... SELECT, same indexes', 1, enqBacklog);
// Group "wal": bytes written and items, so a "rate" is WAL bytes per item.
row('wal/baton', 'WAL bytes an item: pg_baton enqueue_batch', 1, enqBacklog, [['wal/floor', 'the floor']]);
row('wal/staged', 'WAL bytes an item: pg_baton for millions', 1, enqBacklog, [['wal/floor', 'the floor']]);
row('wal/graphile', 'WAL bytes an item: graphile-worker addJobs', 1, enqBacklog, [['wal/floor', 'the floor']]);
row('wal/floor', 'WAL bytes an item: the floor', 1, enqBacklog);

section('vacuum: 16 clients on fresh big tables; normal, then with a REPEATABLE READ snapshot held open (last window)');
row('vacuum/plain:normal', 'plain SQL cycle, normal', 16, vacBig);
row('vacuum/plain:held', 'plain SQL cycle, snapshot held', 16, vacBig, [['vacuum/plain:normal', 'normal']]);
row('vacuum/baton:normal', 'pg_baton cycle, normal', 16, vacBig);
row('vacuum/baton:held', 'pg_baton cycle, snapshot held', 16, vacBig, [['vacuum/baton:normal', 'normal']]);

section('workflow: stage steps/s, each client on its own run; one step = one transaction');
row('workflow/baton', 'pg_baton transition+start+complete', meta.wf_clients ?? 8, 'loop', [
  ['workflow/plain', 'client-side plain SQL'],
]);
row('workflow/plain', 'client-side plain SQL, same protocol', meta.wf_clients ?? 8, 'loop');

if (memory.thousand && memory.million) {
  section('memory: one backend (context bytes = sum of pg_backend_memory_contexts.total_bytes)');
  for (const [phase, m] of [['thousand', memory.thousand], ['million', memory.million]])
    rows.push({
      label: `after ${fmtInt(m.calls)} calls`,
      clients: '1',
      backlog: '',
      rate: '',
      rounds: `context ${mb(m.ctx)}, RssAnon ${mb(m.rss)}`,
      ratios:
        phase === 'million'
          ? `growth: context ${mb(m.ctx - memory.thousand.ctx)}, RssAnon ${mb(m.rss - memory.thousand.rss)}`
          : '',
    });
}

// Print the table.
const head = { label: 'workload', clients: 'clients', backlog: 'backlog', rate: 'items/s', rounds: 'per round', ratios: 'ratios (median of per-round ratios)' };
const cols = ['label', 'clients', 'backlog', 'rate', 'rounds', 'ratios'];
const right = new Set(['clients', 'backlog', 'rate']);
const width = {};
for (const c of cols) width[c] = Math.max(head[c].length, ...rows.filter((r) => !r.section).map((r) => r[c].length));
const fmtRow = (r) =>
  cols
    .map((c) => (c === 'ratios' ? r[c] : right.has(c) ? r[c].padStart(width[c]) : r[c].padEnd(width[c])))
    .join('  ')
    .trimEnd();
console.log('-- results (items/s = median over rounds; "per round" = each round\'s rate)');
console.log(fmtRow(head));
console.log(cols.map((c) => '-'.repeat(c === 'ratios' ? head[c].length : width[c])).join('  '));
rows.forEach((r, i) => {
  if (!r.section) console.log(fmtRow(r));
  else if (rows[i + 1] && !rows[i + 1].section) console.log(`# ${r.section}`);
});

// Goals.
const goals = [];
const goal = (text, value, ok, detail = '') => {
  const verdict = Number.isFinite(value) ? (ok ? 'met' : 'NOT met') : 'not measured';
  goals.push(`   [${verdict}] ${text}: ${Number.isFinite(value) ? fmtRatio(value) : '-'}${detail ? ` (${detail})` : ''}`);
};
const perClient = CLIENTS.map((c) => [c, ratio(`scale/baton@${c}`, `scale/plain@${c}`)]).filter(([, v]) => Number.isFinite(v));
const worst = perClient.length ? Math.min(...perClient.map(([, v]) => v)) : NaN;
goal('unbatched pg_baton / plain SQL, lowest over client counts (>= 1)', worst, worst >= 1,
  perClient.map(([c, v]) => `${c}: ${fmtRatio(v)}`).join(', '));
const c16 = ratio('scale/baton@16', 'scale/ceiling@16', 0.5);
goal('unbatched pg_baton / (ceiling / 2) at 16 clients (>= 0.8)', c16, c16 >= 0.8);
const gw = ratio('peers/batonb', 'peers/gwb');
goal(`batched pg_baton / graphile-worker batched, ${WORKERS()} workers (>= 1.5)`, gw, gw >= 1.5);
const gw500 = ratio('peers/batonb500', 'peers/gwb');
goal(`  the same at graphile-worker's batch size: pg_baton claim 500 / graphile-worker localQueue 500 (>= 1.5)`, gw500, gw500 >= 1.5);
const boss = ratio('peers/batonb', 'peers/bossb');
goal(`batched pg_baton / pg-boss batched, ${WORKERS()} workers (>= 3)`, boss, boss >= 3);
const bigU = ratio('backlog/baton:big', 'backlog/baton:small');
goal(`pg_baton cycle, ${fmtInt(big)} pending / ${fmtInt(small)} pending (>= 0.8)`, bigU, bigU >= 0.8);
const bigB = ratio('backlog/batonb:big', 'backlog/batonb:small');
goal(`pg_baton batched, ${fmtInt(big)} pending / ${fmtInt(small)} pending (>= 0.8)`, bigB, bigB >= 0.8);
const s64 = ratio('scale/baton@64', 'scale/baton@16');
goal('pg_baton cycle, 64 clients / 16 clients (>= 1)', s64, s64 >= 1);
const s64b = ratio('scale/batonb@64', 'scale/batonb@16');
goal('pg_baton batched, 64 clients / 16 clients (>= 1)', s64b, s64b >= 1);
const vac = ratio('vacuum/baton:held', 'vacuum/baton:normal');
goal('pg_baton cycle with vacuum held back / normal (>= 0.8)', vac, vac >= 0.8);
const enq = ratio('enqueue/baton', 'enqueue/graphile');
goal('bulk enqueue, pg_baton enqueue_batch / graphile-worker addJobs (>= 1.5)', enq, enq >= 1.5);
const enqFast = ratio('enqueue/staged', 'enqueue/graphile');
goal('  pg_baton\'s path for millions / graphile-worker addJobs (>= 1.5)', enqFast, enqFast >= 1.5);
const wf = ratio('workflow/baton', 'workflow/plain');
goal('workflow stage steps, pg_baton / client-side plain SQL (>= 3)', wf, wf >= 3);
if (memory.thousand && memory.million) {
  const grow = Math.max(memory.million.ctx - memory.thousand.ctx, memory.million.rss - memory.thousand.rss);
  const verdict = grow <= 4 * 1048576 ? 'met' : 'NOT met';
  goals.push(`   [${verdict}] backend memory after ${fmtInt(memory.million.calls)} calls within 4 MB of after ${fmtInt(memory.thousand.calls)}: ` +
    `context ${mb(memory.million.ctx - memory.thousand.ctx)}, RssAnon ${mb(memory.million.rss - memory.thousand.rss)}`);
} else goals.push('   [not measured] backend memory');
console.log();
console.log('-- goals');
for (const g of goals) console.log(g);

function WORKERS() {
  return 16;
}
