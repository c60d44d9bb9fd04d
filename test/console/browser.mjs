// The console in a real browser (Chromium, headless, driven by playwright-core).
// Started by run.sh, which loads fixtures.sql and starts two consoles: one as an admin
// (ADMIN_URL) and one as a role that may not cancel, redrive or retry (VIEWER_URL).
// Every number a page shows is compared with SQL run here as the superuser (psql, the
// database in PGDATABASE). Prints "N passed, N failed" last.

import { chromium } from 'playwright-core';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { Sampler } from '../../console/lib/sampler.mjs';

const ADMIN = process.env.ADMIN_URL;
const VIEWER = process.env.VIEWER_URL;
const SHOTS = process.env.SCREENSHOT_DIR || '';
const A = 'c0501e00-0000-4000-8000-00000000000a';
const B = 'c0501e00-0000-4000-8000-00000000000b';

let passed = 0;
let failed = 0;
function check(name, ok, info = '') {
    if (ok) { passed++; console.log(`ok   - ${name}`); } else { failed++; console.log(`FAIL - ${name}${info ? `: ${info}` : ''}`); }
}
function same(name, got, want) {
    check(name, isDeepStrictEqual(got, want), `got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}
function sql(q) {
    return execFileSync('psql', ['-XAtq', '-v', 'ON_ERROR_STOP=1', '-F', '|', '-c', q], { encoding: 'utf8' }).trim();
}
const lines = (s) => (s === '' ? [] : s.split('\n'));
const idOf = (key, target = 'mailer') =>
    sql(`SELECT id FROM baton.deliveries WHERE tenant = '${A}' AND target = '${target}' AND dedup_key = '${key}'`);
const rowOf = (id) => sql(`SELECT status || ' ' || generation || ' ' || attempts FROM baton.deliveries WHERE tenant = '${A}' AND id = ${id}`);
const q = (o) => `?${new URLSearchParams(o)}`;

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
const page = await context.newPage();
const dialogs = [];
const pageErrors = [];
page.on('dialog', async (d) => { dialogs.push(d.message()); await d.dismiss(); });
page.on('pageerror', (e) => pageErrors.push(e.message));
page.on('console', (m) => {
    // A 4xx page the test asks for on purpose is logged as a failed resource; those are checked by status.
    if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) pageErrors.push(m.text());
});

async function open(url, status = 200) {
    const res = await page.goto(url);
    check(`GET ${url.replace(/^http:\/\/[^/]+/, '')} is ${status}`, res.status() === status, `got ${res.status()}`);
    return res;
}
const texts = (sel) => page.$$eval(sel, (els) => els.map((e) => e.textContent));
const attrs = (sel, a) => page.$$eval(sel, (els, a) => els.map((e) => e.getAttribute(a)), a);
async function shot(name) {
    if (!SHOTS) return;
    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: `${SHOTS}/console-${name}.png`, fullPage: true });
}
// Follows "next page" links from url and returns every id shown, in order.
async function allIds(url) {
    const ids = [];
    await page.goto(url);
    for (let i = 0; i < 100; i++) {
        ids.push(...(await attrs('#deliveries tr[data-id]', 'data-id')));
        const next = await page.$('#next');
        if (!next) break;
        await Promise.all([page.waitForNavigation(), next.click()]);
    }
    return ids;
}
async function click(sel) {
    const [res] = await Promise.all([page.waitForNavigation(), page.click(sel)]);
    return res;
}

async function scenario(name, fn) {
    try { await fn(); } catch (e) { check(`${name} ran through`, false, e.stack); }
}

await scenario('overview', async () => {
    // The statistics behind a check may move between the page's read and ours: three tries.
    let health, shown;
    for (let i = 0; i < 3; i++) {
        await open(`${ADMIN}/`);
        shown = await page.$$eval('#health tr[data-check]', (rows) => rows.map((r) => `${r.dataset.check}=${r.children[1].textContent}`));
        health = lines(sql('SELECT name || \'=\' || status FROM baton.health'));
        if (isDeepStrictEqual(shown, health)) break;
    }
    same('overview: health rows and statuses are baton.health\'s', shown, health);
    const pairs = lines(sql(`SELECT tenant || '|' || target || '|' ||
            count(*) FILTER (WHERE status = 'pending') || '|' || count(*) FILTER (WHERE status = 'claimed')
        FROM baton.deliveries GROUP BY tenant, target ORDER BY tenant, target COLLATE "C"`));
    const rows = await page.$$eval('#queues tr[data-tenant]', (rs) => rs.map((r) =>
        `${r.dataset.tenant}|${r.dataset.target}|${r.querySelector('.pending').textContent}|${r.querySelector('.leased').textContent}`));
    same('overview: pending and leased of every tenant and target', rows.sort(), pairs.sort());
    const enq = lines(sql('SELECT tenant || \'|\' || target || \'|\' || enqueued FROM baton.delivery_counters'));
    const shownEnq = await page.$$eval('#queues tr[data-tenant]', (rs) => rs.map((r) =>
        `${r.dataset.tenant}|${r.dataset.target}|${r.querySelector('.ev-enqueued').textContent}`));
    same('overview: enqueued counters are baton.delivery_counters\'', shownEnq.sort(), enq.sort());
    const oldest = await page.$eval(`#queues tr[data-tenant="${A}"][data-target="mailer"] .oldest`, (e) => e.textContent);
    check('overview: mailer shows the wait of its oldest due pending delivery', /\d+(\.\d)? s|min/.test(oldest), oldest);
    same('overview: a target named <img ...> shows as text', await texts('#queues a[href*="onerror"]'), ['<img src=x onerror=alert(2)>']);

    // Throughput: 40 more of B's indexer enqueued and 10 claimed, counted, sampled.
    sql(`SELECT count(baton.enqueue('${B}', 'indexer', 'more' || g)) FROM generate_series(1, 40) g`);
    sql(`SELECT count(*) FROM baton.claim('${B}', 'indexer', '1 hour', 10)`);
    sql('SELECT baton.flush_counts()');
    await page.waitForTimeout(2600);
    await open(`${ADMIN}/`);
    const card = `.pair[data-tenant="${B}"][data-target="indexer"]`;
    same('overview: the throughput plot of indexer counts the 40 enqueued', await attrs(`${card} polyline[data-series="enqueued"]`, 'data-events'), ['40']);
    same('overview: and the 10 claimed', await attrs(`${card} polyline[data-series="claimed"]`, 'data-events'), ['10']);
    const pts = await attrs(`${card} polyline[data-series="enqueued"]`, 'points');
    check('overview: the plot has a line of several samples', pts.length === 1 && pts[0].split(' ').length >= 2, String(pts));
    await shot('overview');
});

await scenario('deliveries', async () => {
    const base = { tenant: A, target: 'mailer' };
    const all = lines(sql(`SELECT id FROM baton.deliveries WHERE tenant = '${A}' AND target = 'mailer' ORDER BY id DESC`));
    await open(`${ADMIN}/deliveries${q({ ...base, limit: 5 })}`);
    same('deliveries: the first page is the 5 newest', await attrs('#deliveries tr[data-id]', 'data-id'), all.slice(0, 5));
    same('deliveries: following next pages lists every delivery once, newest first', await allIds(`${ADMIN}/deliveries${q({ ...base, limit: 5 })}`), all);
    for (const state of ['failed', 'cancelled', 'claimed', 'finished']) {
        const want = lines(sql(`SELECT id FROM baton.deliveries WHERE tenant = '${A}' AND target = 'mailer' AND status = '${state}' ORDER BY id DESC`));
        same(`deliveries: state ${state}, 2 a page`, await allIds(`${ADMIN}/deliveries${q({ ...base, state, limit: 2 })}`), want);
    }
    const pend = lines(sql(`SELECT id FROM baton.deliveries WHERE tenant = '${A}' AND target = 'mailer' AND status = 'pending' ORDER BY priority DESC, id`));
    same('deliveries: pending in claim order (priority first), 3 a page', await allIds(`${ADMIN}/deliveries${q({ ...base, state: 'pending', limit: 3 })}`), pend);
    const k1 = lines(sql(`SELECT id FROM baton.deliveries WHERE tenant = '${A}' AND target = 'mailer' AND dedup_key LIKE 'k1%' ORDER BY dedup_key`));
    same('deliveries: dedup key prefix k1, 2 a page', await allIds(`${ADMIN}/deliveries${q({ ...base, prefix: 'k1', limit: 2 })}`), k1);
    same('deliveries: prefix <script> finds the markup key', await allIds(`${ADMIN}/deliveries${q({ ...base, prefix: '<script>' })}`), [idOf('<script>alert(1)</script>')]);
    const c9 = idOf('c9');
    same('deliveries: by id', await allIds(`${ADMIN}/deliveries${q({ ...base, id: c9 })}`), [c9]);

    // The filter form, used as a person would.
    await open(`${ADMIN}/deliveries${q(base)}`);
    await page.selectOption('#filters select[name=state]', 'cancelled');
    await click('#filters button[type=submit]');
    same('deliveries: the form filters by state', await attrs('#deliveries tr[data-id]', 'data-id'),
        lines(sql(`SELECT id FROM baton.deliveries WHERE tenant = '${A}' AND target = 'mailer' AND status = 'cancelled' ORDER BY id DESC`)));

    // Markup shows as text.
    await open(`${ADMIN}/deliveries${q(base)}`);
    const xss = idOf('<script>alert(1)</script>');
    same('deliveries: the <script> dedup key shows as text', await texts(`tr[data-id="${xss}"] .dedup`), ['<script>alert(1)</script>']);
    same('deliveries: the payload with <script> and <b> shows as text', await texts(`tr[data-id="${xss}"] .payload`), ['{"html":"<script>alert(1)</script><b>bold</b>"}']);
    same('deliveries: the markup reason of a cancel shows as text', await texts(`tr[data-id="${idOf('c5')}"] .error`), ['<script>alert(3)</script> by <b>ops</b>']);
    same('deliveries: no element came from the data', await page.$$eval('main script, main b, main img, main i', (e) => e.length), 0);
    await shot('deliveries');
    await open(`${ADMIN}/delivery${q({ tenant: A, id: xss })}`);
    check('delivery: the payload shows as text', (await texts('.f-payload'))[0].includes('"<script>alert(1)</script><b>bold</b>"'));
    await open(`${ADMIN}/deliveries${q({ tenant: A, target: '<img src=x onerror=alert(2)>' })}`);
    same('deliveries: a target named <img ...> lists its delivery', await attrs('#deliveries tr[data-id]', 'data-id'), [idOf('x1', '<img src=x onerror=alert(2)>')]);
});

await scenario('actions', async () => {
    const base = { tenant: A, target: 'mailer' };
    const k01 = idOf('k01');
    await open(`${ADMIN}/deliveries${q({ ...base, prefix: 'k01' })}`);
    await click(`tr[data-id="${k01}"] button[data-action=cancel]`);
    same('cancel: the page says what cancel_delivery returned', await texts('#note'), ['cancel_delivery returned cancelled']);
    same('cancel: the delivery is cancelled, generation bumped', rowOf(k01), 'cancelled 1 0');

    const c3 = idOf('c3');
    await open(`${ADMIN}/deliveries${q({ ...base, state: 'failed' })}`);
    await click(`tr[data-id="${c3}"] button[data-action=redrive]`);
    same('redrive: the delivery is pending again with attempts 0', rowOf(c3), 'pending 1 0');
    check('redrive: the page is back on the list with a note', (await texts('#note'))[0]?.startsWith('redrive moved 1'));

    const c7 = idOf('c7');
    await open(`${ADMIN}/deliveries${q({ ...base, state: 'claimed' })}`);
    await click(`tr[data-id="${c7}"] button[data-action=retry]`);
    same('retry: the claimed delivery is pending at generation 2', rowOf(c7), 'pending 2 1');

    // A generation that changed since the page showed it: DU001, nothing written.
    const c8 = idOf('c8');
    await open(`${ADMIN}/deliveries${q({ ...base, state: 'claimed' })}`);
    sql(`SELECT baton.cancel_delivery('${A}', ${c8}, 'meanwhile')`);
    const stale = await click(`tr[data-id="${c8}"] button[data-action=retry]`);
    same('retry of a stale generation: 409 with DU001', [stale.status(), (await texts('#sqlstate'))[0]], [409, 'DU001']);
    same('retry of a stale generation: nothing changed', rowOf(c8), 'cancelled 2 1');

    // A target bound to a role the console's role is no member of: DU005 shown in full.
    const s1 = idOf('s1', 'secure');
    await open(`${ADMIN}/deliveries${q({ tenant: A, target: 'secure' })}`);
    const bound = await click(`tr[data-id="${s1}"] button[data-action=retry]`);
    same('retry on a bound target: 403 with DU005', [bound.status(), (await texts('#sqlstate'))[0]], [403, 'DU005']);
    check('retry on a bound target: the message names the target', /secure/.test((await texts('#message'))[0] || ''));
    check('retry on a bound target: detail or hint shown', (await page.$$('#detail, #hint')).length > 0);
    same('retry on a bound target: nothing changed', rowOf(s1), 'claimed 1 1');
    await shot('refusal');
});

await scenario('refusals of a role without the grants', async () => {
    for (const path of ['/', `/deliveries${q({ tenant: A, target: 'mailer' })}`, `/delivery${q({ tenant: A, id: idOf('c4') })}`,
        `/runs${q({ tenant: A })}`, `/run${q({ tenant: A, id: sql(`SELECT id FROM baton.runs WHERE tenant = '${A}' AND status = 'running'`) })}`,
        '/schedules']) {
        await open(`${VIEWER}${path}`);
        same(`viewer: ${path.split('?')[0]} reads without a refusal`, await page.$$eval('#error', (e) => e.length), 0);
    }
    await open(`${VIEWER}/`);
    same('viewer: the overview shows health and the queues', [(await attrs('#health tr[data-check]', 'data-check')).length > 0,
        (await attrs('#queues tr[data-tenant]', 'data-target')).length > 0], [true, true]);
    const c4 = idOf('c4');
    await open(`${VIEWER}/deliveries${q({ tenant: A, target: 'mailer', state: 'failed' })}`);
    const r = await click(`tr[data-id="${c4}"] button[data-action=redrive]`);
    same('viewer redrive: 403 with 42501', [r.status(), (await texts('#sqlstate'))[0]], [403, '42501']);
    same('viewer redrive: Postgres\' message shown', await texts('#message'), ['permission denied for function redrive']);
    same('viewer redrive: nothing changed', rowOf(c4), 'failed 1 1');
    const k02 = idOf('k02');
    await open(`${VIEWER}/deliveries${q({ tenant: A, target: 'mailer', prefix: 'k02' })}`);
    const r2 = await click(`tr[data-id="${k02}"] button[data-action=cancel]`);
    same('viewer cancel: 403 with 42501', [r2.status(), (await texts('#sqlstate'))[0]], [403, '42501']);
    same('viewer cancel: nothing changed', rowOf(k02), 'pending 0 0');
});

await scenario('forgery', async () => {
    const k03 = idOf('k03');
    const token = await (async () => {
        await open(`${ADMIN}/deliveries${q({ tenant: A, target: 'mailer', prefix: 'k03' })}`);
        return page.$eval('input[name=csrf]', (e) => e.value);
    })();
    const form = { action: 'cancel', tenant: A, id: k03, back: '/' };
    let r = await page.request.post(`${ADMIN}/action`, { form, maxRedirects: 0 });
    same('POST without the token: 403', r.status(), 403);
    r = await page.request.post(`${ADMIN}/action`, { form: { ...form, csrf: 'x'.repeat(token.length) }, maxRedirects: 0 });
    same('POST with a wrong token: 403', r.status(), 403);
    // As many characters as the token, twice as many bytes.
    r = await page.request.post(`${ADMIN}/action`, { form: { ...form, csrf: '\u00e9'.repeat(token.length) }, maxRedirects: 0 });
    same('POST with a non-ASCII token of the same length: 403', r.status(), 403);
    // Names an object has from its prototype are no actions.
    for (const action of ['constructor', 'hasOwnProperty', 'toString', '__proto__']) {
        r = await page.request.post(`${ADMIN}/action`, { form: { ...form, action, csrf: token }, maxRedirects: 0 });
        const body = await r.text();
        const location = r.headers().location || '';
        check(`POST action=${action}: 400 "unknown action", no redirect, the token nowhere`,
            r.status() === 400 && body.includes(`unknown action &quot;${action}&quot;`) && location === ''
                && !body.includes(token) && !location.includes(token),
            `${r.status()} location=${location} ${body.slice(0, 300)}`);
    }
    r = await page.request.post(`${ADMIN}/action`, { form: { ...form, csrf: token }, headers: { origin: 'http://evil.example' }, maxRedirects: 0 });
    same('POST from another origin: 403', r.status(), 403);
    r = await page.request.get(`${ADMIN}/action${q({ ...form, csrf: token })}`);
    same('GET of the action: 404, no action', r.status(), 404);
    r = await page.request.post(`${ADMIN}/action`, { form: { ...form, csrf: token }, headers: { host: 'evil.example' }, maxRedirects: 0 });
    same('a request for another host name: 421', r.status(), 421);
    same('forgery: nothing changed', rowOf(k03), 'pending 0 0');
});

await scenario('sampler', async () => {
    // stop() while a sample is being read: no sample after it.
    let queries = 0;
    const slow = { query: () => { queries++; return new Promise((resolve) => setTimeout(() => resolve({ rows: [] }), 100)); } };
    const sampler = new Sampler(slow, { everyMs: 10 });
    const first = sampler.start();
    sampler.stop();
    await first;
    await new Promise((resolve) => setTimeout(resolve, 300));
    same('sampler: stopped during a sample, it samples no more', queries, 1);
});

await scenario('malformed parameters', async () => {
    const bad = [
        ['/deliveries', { tenant: 'not-a-uuid', target: 'mailer' }, 'must be a uuid'],
        ['/deliveries', { tenant: A, target: 'mailer', limit: '-1' }, 'from 1 to 500'],
        ['/deliveries', { tenant: A, target: 'mailer', limit: 'ten' }, 'must be an integer'],
        ['/deliveries', { tenant: A, target: 'mailer', state: 'lost' }, 'must be one of'],
        ['/deliveries', { tenant: A, target: 'mailer', id: '-3' }, 'positive integer'],
        ['/deliveries', { tenant: A, target: 'mailer', after: 'garbage' }, 'not a cursor'],
        ['/deliveries', { tenant: A }, 'required together'],
        ['/deliveries', { tenant: A, target: 'mailer', color: 'red' }, 'unknown parameter'],
        ['/delivery', { tenant: A, id: '99999999999999999999' }, 'positive integer'],
        ['/runs', { tenant: A, state: 'sleeping' }, 'must be one of'],
        ['/run', { tenant: A, id: '42' }, 'must be a uuid'],
        ['/schedules', { limit: '0' }, 'from 1 to 500'],
    ];
    for (const [path, params, words] of bad) {
        const res = await page.goto(`${ADMIN}${path}${q(params)}`);
        const msg = (await texts('#message'))[0] || '';
        const body = await page.content();
        check(`${path}${q(params)}: 400 "${words}"`, res.status() === 400 && msg.includes(words) && !/\.mjs|at async/.test(body), `${res.status()} ${msg}`);
    }
});

await scenario('runs', async () => {
    const runs = lines(sql(`SELECT id || '|' || status FROM baton.runs WHERE tenant = '${A}' ORDER BY id`));
    await open(`${ADMIN}/runs${q({ tenant: A })}`);
    same('runs: every run of the tenant with its status', await page.$$eval('#runs tr[data-run]', (rs) => rs.map((r) => `${r.dataset.run}|${r.querySelector('.status').textContent}`)), runs);
    const submitted = lines(sql(`SELECT id FROM baton.runs WHERE tenant = '${A}' AND status = 'submitted' ORDER BY id`));
    await open(`${ADMIN}/runs${q({ tenant: A, state: 'submitted' })}`);
    same('runs: filtered by status', await attrs('#runs tr[data-run]', 'data-run'), submitted);
    const run = sql(`SELECT id FROM baton.runs WHERE tenant = '${A}' AND status = 'running'`);
    await open(`${ADMIN}/run${q({ tenant: A, id: run })}`);
    const stages = lines(sql(`SELECT id || '|' || stage || '|' || status FROM baton.run_history('${A}', '${run}')`));
    same('run: the stages in chain order with their status', await page.$$eval('#stages tr[data-stage]', (rs) => rs.map((r) =>
        `${r.dataset.stage}|${r.children[1].textContent}|${r.querySelector('.status').textContent}`)), stages);
    const decision = JSON.parse(sql(`SELECT transition FROM baton.run_history('${A}', '${run}') WHERE stage = 'fetch'`));
    const shownDecision = await page.$eval('#stages tr[data-stage] .decision', (e) => e.textContent);
    same('run: the decision saved on the first stage', JSON.parse(shownDecision), decision);
    same('run: the timeline has a bar per stage', await page.$$eval('svg.timeline rect', (e) => e.length), stages.length);
    const doubt = lines(sql(`SELECT entry_id || '|' || operation_id FROM baton.markers_in_doubt('${A}', '${run}')`));
    same('run: the markers in doubt', await page.$$eval('#doubt tr:not(:first-child)', (rs) => rs.map((r) => `${r.children[0].textContent}|${r.children[4].textContent}`)), doubt);
    check('run: the inputs with <script> show as text', (await texts('#run pre'))[0].includes('<script>alert(4)</script>'));
    same('run: no element came from the data', await page.$$eval('main script, main b', (e) => e.length), 0);
    await shot('run');
});

await scenario('schedules', async () => {
    const want = lines(sql(`SELECT name || '|' || coalesce(to_char(next_fire_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || 'Z', '')
            || '|' || coalesce(to_char(last_fired_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || 'Z', '')
        FROM baton.schedules ORDER BY tenant, name`));
    await open(`${ADMIN}/schedules`);
    same('schedules: each with its next and last fire', await page.$$eval('#schedules tr[data-name]', (rs) => rs.map((r) =>
        `${r.dataset.name}|${r.querySelector('.next').textContent}|${r.querySelector('.last').textContent}`)), want);
    await open(`${ADMIN}/schedules${q({ limit: 1 })}`);
    await click('#next');
    same('schedules: the second page', await attrs('#schedules tr[data-name]', 'data-name'), [want[1].split('|')[0]]);
    await shot('schedules');
});

await scenario('command line', async () => {
    const run = (args) => {
        try {
            execFileSync(process.execPath, ['console/server.mjs', ...args], { encoding: 'utf8', stdio: 'pipe' });
            return { code: 0, err: '' };
        } catch (e) {
            return { code: e.status, err: e.stderr };
        }
    };
    let r = run([]);
    check('server.mjs without a URL: exit 2 with the usage', r.code === 2 && /usage: pg-baton-console/.test(r.err), JSON.stringify(r));
    r = run(['postgresql://x@/y', '--port', '-1']);
    check('server.mjs --port -1: exit 2', r.code === 2 && /--port/.test(r.err), JSON.stringify(r));
    r = run(['postgresql://x@/y', '--colour']);
    check('server.mjs with an unknown option: exit 2', r.code === 2 && /unknown option --colour/.test(r.err), JSON.stringify(r));
    await open(`${ADMIN}/?refresh=10`);
    same('overview ?refresh=10 reloads itself', await attrs('meta[http-equiv=refresh]', 'content'), ['10']);
    await open(`${ADMIN}/?refresh=0`, 400);
});

same('no dialog opened', dialogs, []);
same('no error in the pages\' consoles', pageErrors, []);
await browser.close();
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
