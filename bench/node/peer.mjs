// The peer queues of bench/run.sh, run on Node.js 22: graphile-worker and pg-boss.
//
//   node peer.mjs setup SYSTEM BACKLOG [CHUNK]
//       installs SYSTEM's schema afresh (DROP SCHEMA ... CASCADE, then its own migrations)
//       and enqueues BACKLOG no-op jobs with its own bulk API, CHUNK jobs a call (default
//       5,000); prints "enqueued N S" (S in seconds: the calls only, not the migrations).
//       Nothing is worked.
//   node peer.mjs work SYSTEM MODE WORKERS
//       works the jobs with no-op handlers until SIGTERM or SIGINT; prints "working".
//       MODE is "unbatched" (one job at a time per worker) or "batched".
//   node peer.mjs count-sql SYSTEM BACKLOG
//       prints the SQL that counts the worked jobs of a BACKLOG (from the tables).
//
// SYSTEM is "graphile" (graphile-worker) or "pgboss" (pg-boss); for setup also "baton":
// pg_baton's enqueue_batch called by this same client, the items a JSON parameter, into
// a fresh pg_baton whose tenant BATON_TENANT exists (bench/run.sh's enqueue group), so
// that all three bulk APIs are called alike. The connection comes from the libpq
// environment (PGHOST as a socket directory, PGPORT, PGUSER, PGDATABASE).
//
// Settings, from each project's documentation (node_modules/*/README.md, the option
// docs in their .d.ts files and the graphile-worker performance page):
//   graphile-worker unbatched: concurrentJobs = WORKERS, maxPoolSize = WORKERS + 2,
//     useNodeTime, pollInterval 100 ms (only used when idle); no local queue, completions
//     not batched (the defaults).
//   graphile-worker batched: the same plus localQueue.size = 500, completeJobBatchDelay = 0
//     and failJobBatchDelay = 0 (the configuration of its published performance figures).
//   pg-boss unbatched: work() with batchSize 1, localConcurrency = WORKERS,
//     pollingIntervalSeconds 0.5 (its minimum); burst mode while the backlog is large
//     (burstWhenReadyExceeds, fed by a queue cache refreshed every second), since with
//     batchSize 1 each worker otherwise sleeps a polling interval after every job.
//   pg-boss batched: work() with batchSize 50, localConcurrency = WORKERS,
//     burstWhenBatchFull (fetch again at once while fetches come back full); the handler
//     gets the 50 jobs and pg-boss completes them together.
import pg from 'pg';

const QUEUE = 'bench';
const DEFAULT_CHUNK = 5000;

const [, , command, system, ...rest] = process.argv;

function die(msg) {
  console.error(`peer.mjs: ${msg}`);
  process.exit(2);
}

function newPool(max) {
  const pool = new pg.Pool(poolConfig(max));
  pool.on('error', (err) => console.error(`peer.mjs: pool: ${err.message}`));
  pool.on('connect', (client) => client.on('error', (err) => console.error(`peer.mjs: client: ${err.message}`)));
  return pool;
}

function poolConfig(max) {
  return { max, application_name: `bench-${system}` };
}

async function withClient(fn) {
  const client = new pg.Client(poolConfig(1));
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

const silentLogger = async () => {
  const { Logger } = await import('graphile-worker');
  return new Logger(() => (level, message) => {
    if (level === 'error') console.error(`graphile-worker: ${message}`);
  });
};

// ---------------------------------------------------------------------------
// graphile-worker
// ---------------------------------------------------------------------------

const graphile = {
  async setup(backlog, chunk) {
    const { runMigrations, makeWorkerUtils } = await import('graphile-worker');
    await withClient((c) => c.query('DROP SCHEMA IF EXISTS graphile_worker CASCADE'));
    const pgPool = newPool(4);
    const logger = await silentLogger();
    await runMigrations({ pgPool, logger });
    const utils = await makeWorkerUtils({ pgPool, logger });
    const t0 = performance.now();
    for (let done = 0; done < backlog; done += chunk) {
      const n = Math.min(chunk, backlog - done);
      const specs = Array.from({ length: n }, (_, i) => ({ identifier: QUEUE, payload: { n: done + i } }));
      await utils.addJobs(specs);
    }
    const secs = (performance.now() - t0) / 1000;
    await utils.release();
    await pgPool.end();
    return secs;
  },

  async work(mode, workers) {
    const { run } = await import('graphile-worker');
    const pgPool = newPool(workers + 2);
    const worker = {
      concurrentJobs: workers,
      maxPoolSize: workers + 2,
      pollInterval: 100,
      useNodeTime: true,
    };
    if (mode === 'batched') {
      worker.localQueue = { size: 500 };
      worker.completeJobBatchDelay = 0;
      worker.failJobBatchDelay = 0;
    }
    const runner = await run({
      pgPool,
      noHandleSignals: true,
      logger: await silentLogger(),
      taskList: { [QUEUE]: async () => {} },
      preset: { worker },
    });
    return async () => {
      await runner.stop();
      await pgPool.end();
    };
  },

  // Worked jobs are deleted: what is gone from the backlog has been worked.
  countSql: (backlog) => `SELECT ${backlog} - count(*) AS n FROM graphile_worker._private_jobs`,
};

// ---------------------------------------------------------------------------
// pg-boss
// ---------------------------------------------------------------------------

async function makeBoss(extra) {
  const { PgBoss } = await import('pg-boss');
  const boss = new PgBoss({
    host: process.env.PGHOST,
    port: Number(process.env.PGPORT || 5432),
    user: process.env.PGUSER,
    database: process.env.PGDATABASE,
    schedule: false,
    supervise: false,
    ...extra,
  });
  boss.on('error', (err) => console.error(`pg-boss: ${err.message}`));
  await boss.start();
  return boss;
}

const pgboss = {
  async setup(backlog, chunk) {
    await withClient((c) => c.query('DROP SCHEMA IF EXISTS pgboss CASCADE'));
    const boss = await makeBoss({ max: 4 });
    await boss.createQueue(QUEUE);
    const t0 = performance.now();
    for (let done = 0; done < backlog; done += chunk) {
      const n = Math.min(chunk, backlog - done);
      await boss.insert(QUEUE, Array.from({ length: n }, (_, i) => ({ data: { n: done + i } })));
    }
    const secs = (performance.now() - t0) / 1000;
    await boss.stop({ graceful: false, close: true });
    return secs;
  },

  async work(mode, workers) {
    const options = { localConcurrency: workers, pollingIntervalSeconds: 0.5 };
    let boss;
    if (mode === 'batched') {
      boss = await makeBoss({ max: workers + 4 });
      Object.assign(options, { batchSize: 50, burstWhenBatchFull: true });
      await boss.work(QUEUE, options, async (jobs) => jobs.length);
    } else {
      // The ready count that burst mode reads comes from the supervisor's queue stats.
      boss = await makeBoss({
        max: workers + 4,
        supervise: true,
        superviseIntervalSeconds: 1,
        monitorIntervalSeconds: 1,
        queueCacheIntervalSeconds: 1,
      });
      Object.assign(options, { batchSize: 1, burstWhenReadyExceeds: 1 });
      await boss.work(QUEUE, options, async ([job]) => job.id);
    }
    return async () => {
      await boss.stop({ graceful: false, close: true, timeout: 2000 });
    };
  },

  countSql: () => `SELECT count(*) AS n FROM pgboss.job WHERE name = '${QUEUE}' AND state = 'completed'`,
};

// ---------------------------------------------------------------------------
// pg_baton: enqueue_batch only (its workers are pgbench scripts, bench/sql)
// ---------------------------------------------------------------------------

const baton = {
  async setup(backlog, chunk) {
    const tenant = process.env.BATON_TENANT ?? die('BATON_TENANT is not set');
    return withClient(async (c) => {
      await c.query('SET baton.notify = off');
      const t0 = performance.now();
      for (let done = 0; done < backlog; done += chunk) {
        const n = Math.min(chunk, backlog - done);
        const items = Array.from({ length: n }, (_, i) => ({
          target: QUEUE,
          dedup_key: `k${done + i + 1}`,
          payload: { n: done + i + 1 },
        }));
        await c.query('SELECT count(*) FROM baton.enqueue_batch($1, $2)', [tenant, JSON.stringify(items)]);
      }
      return (performance.now() - t0) / 1000;
    });
  },
};

const systems = { graphile, pgboss, baton };
const impl = systems[system] ?? die(`unknown system '${system}' (graphile, pgboss or baton)`);
if (system === 'baton' && command !== 'setup') die('baton: setup only');

switch (command) {
  case 'setup': {
    const backlog = Number(rest[0]);
    const chunk = Number(rest[1] ?? DEFAULT_CHUNK);
    if (!Number.isInteger(backlog) || backlog < 1 || !Number.isInteger(chunk) || chunk < 1)
      die('setup SYSTEM BACKLOG [CHUNK]');
    const secs = await impl.setup(backlog, chunk);
    console.log(`enqueued ${backlog} ${secs.toFixed(3)}`);
    break;
  }
  case 'work': {
    const [mode, w] = rest;
    const workers = Number(w);
    if (!['unbatched', 'batched'].includes(mode) || !Number.isInteger(workers) || workers < 1)
      die('work SYSTEM unbatched|batched WORKERS');
    const stop = await impl.work(mode, workers);
    console.log('working');
    let stopping = false;
    const onSignal = async () => {
      if (stopping) process.exit(1);
      stopping = true;
      const timer = setTimeout(() => process.exit(0), 5000);
      timer.unref();
      try {
        await stop();
      } catch (err) {
        console.error(`peer.mjs: stop: ${err.message}`);
      }
      process.exit(0);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    break;
  }
  case 'count-sql':
    console.log(impl.countSql(Number(rest[0])));
    break;
  default:
    die(`unknown command '${command}' (setup, work, count-sql)`);
}
