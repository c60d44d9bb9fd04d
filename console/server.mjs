#!/usr/bin/env node
// pg_baton's web console: node server.mjs postgresql://user@host/db [--port N] [--sample-seconds S]
// Listens on 127.0.0.1 only. Acts through pg_baton's functions and views as the role of
// the connection string; see docs/guide/console.md.

import http from 'node:http';
import crypto from 'node:crypto';
import pg from 'pg';
import { layout, errorBox, html } from './lib/html.mjs';
import { BadRequest } from './lib/params.mjs';
import * as P from './lib/params.mjs';
import * as pages from './lib/pages.mjs';
import * as Q from './lib/queries.mjs';
import { Sampler } from './lib/sampler.mjs';

const USAGE = 'usage: pg-baton-console CONNECTION_URL [--port N] [--sample-seconds S]';

function parseArgs(argv) {
    const opts = { url: null, port: 8080, sampleSeconds: 5 };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const value = () => {
            if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
            return argv[++i];
        };
        if (a === '--port') opts.port = Number(value());
        else if (a === '--sample-seconds') opts.sampleSeconds = Number(value());
        else if (a === '--help' || a === '-h') { console.log(USAGE); process.exit(0); }
        else if (a.startsWith('-')) throw new Error(`unknown option ${a}`);
        else if (opts.url === null) opts.url = a;
        else throw new Error(`unexpected argument ${a}`);
    }
    if (!opts.url) throw new Error('a connection URL is required');
    if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) throw new Error('--port must be 0..65535');
    if (!(opts.sampleSeconds >= 1 && opts.sampleSeconds <= 3600)) throw new Error('--sample-seconds must be 1..3600');
    return opts;
}

// SQLSTATE to HTTP status for a refusal shown on a page.
function statusOf(err) {
    if (err instanceof BadRequest) return 400;
    const c = err.code || '';
    if (c === '42501' || c === 'DU005') return 403;
    if (c === 'DU008') return 404;
    if (['DU001', 'DU002', 'DU007', 'DU009'].includes(c)) return 409;
    if (c.startsWith('22')) return 400;
    return 500;
}

const GET_PAGES = {
    '/': pages.overview,
    '/deliveries': pages.deliveries,
    '/delivery': pages.deliveryPage,
    '/runs': pages.runs,
    '/run': pages.runPage,
    '/schedules': pages.schedulesPage,
};

// The actions by name: a Map, so that a name such as "constructor" finds nothing.
const ACTIONS = new Map([
    ['cancel', (f, ctx) =>
        Q.cancelDelivery(ctx.pool, need(f, 'tenant', P.uuid), need(f, 'id', P.id), 'cancelled from the console')],
    ['redrive', (f, ctx) =>
        Q.redrive(ctx.pool, need(f, 'tenant', P.uuid), need(f, 'target', P.text), need(f, 'id', P.id))],
    ['retry', (f, ctx) =>
        Q.retryNow(ctx.pool, need(f, 'tenant', P.uuid), need(f, 'id', P.id),
            need(f, 'generation', P.bigintAny), 'retried from the console')],
]);

// "user@database" of a connection URL, for the header; never the password.
function describe(url) {
    const m = /^postgres(?:ql)?:\/\/(?:([^:@/]*)(?::[^@/]*)?@)?[^/?]*\/([^?]*)/.exec(url);
    return m ? `${decodeURIComponent(m[1] || '')}@${decodeURIComponent(m[2] || '')}` : '';
}

function need(form, name, check) {
    const v = check(form, name);
    if (v === null) throw new BadRequest(`field "${name}" is required`);
    return v;
}

function readBody(req, max = 16384) {
    return new Promise((resolve, reject) => {
        let size = 0;
        const chunks = [];
        req.on('data', (c) => {
            size += c.length;
            if (size > max) { reject(new BadRequest('request body too large')); req.destroy(); return; }
            chunks.push(c);
        });
        req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        req.on('error', reject);
    });
}

function safeBack(back) {
    return typeof back === 'string' && /^\/[a-z]*(\?[^\\]*)?$/.test(back) ? back : '/';
}

export function createConsole({ url, port, sampleSeconds }) {
    const pool = new pg.Pool({
        connectionString: url, max: 4, application_name: 'pg_baton_console',
        statement_timeout: 15000, idleTimeoutMillis: 30000,
    });
    pool.on('error', () => {}); // an idle connection lost: the next query opens another
    const sampler = new Sampler(pool, { everyMs: sampleSeconds * 1000 });
    const csrf = crypto.randomBytes(24).toString('base64url');
    const csrfBytes = Buffer.from(csrf);
    const dbLabel = describe(url);
    const ctx = { pool, sampler, csrf };
    let allowedHosts = [];

    const send = (res, status, body, extra = {}) => {
        res.writeHead(status, {
            'content-type': 'text/html; charset=utf-8',
            'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            'x-content-type-options': 'nosniff',
            'referrer-policy': 'same-origin',
            'cache-control': 'no-store',
            ...extra,
        });
        res.end(String(body));
    };
    const refusal = (res, err, back, what = '') => {
        const status = statusOf(err);
        const shown = err instanceof BadRequest ? { code: '', message: err.message } : err;
        if (status === 500 && !err.code) console.error(err);
        const body = html`<h1>${status === 400 ? 'Bad request' : 'Refused'}</h1>${what ? html`<p id="what">${what}</p>` : ''}${err.code || err instanceof BadRequest
            ? errorBox(shown) : errorBox({ code: '', message: 'internal error (see the console\'s log)' })}
<p><a href="${back || '/'}">back</a></p>`;
        send(res, status, layout({ title: 'refused', nav: '', db: dbLabel, body }));
    };

    const server = http.createServer(async (req, res) => {
        let url;
        try {
            url = new URL(req.url, 'http://127.0.0.1');
        } catch {
            return send(res, 400, 'bad request');
        }
        try {
            // DNS rebinding: only our own host names.
            if (!allowedHosts.includes(req.headers.host)) {
                return send(res, 421, 'misdirected request: use http://127.0.0.1 or http://localhost with the console\'s port');
            }
            if (req.method === 'GET' || req.method === 'HEAD') {
                const page = GET_PAGES[url.pathname];
                if (!page) return send(res, 404, layout({ title: 'not found', nav: '', db: dbLabel, body: html`<h1>Not found</h1><p>No page ${url.pathname}.</p>` }));
                const out = await page(url.searchParams, ctx, url);
                return send(res, 200, layout({ ...out, db: dbLabel }));
            }
            if (req.method === 'POST' && url.pathname === '/action') {
                const origin = req.headers.origin;
                if (origin !== undefined && !allowedHosts.some((h) => origin === `http://${h}`)) {
                    return send(res, 403, 'cross-origin request refused');
                }
                const form = new URLSearchParams(await readBody(req));
                // Compared as bytes: a token of the same length in characters may differ in bytes.
                const token = Buffer.from(form.get('csrf') || '');
                if (token.length !== csrfBytes.length || !crypto.timingSafeEqual(token, csrfBytes)) {
                    return send(res, 403, layout({ title: 'refused', nav: '', db: dbLabel, body: html`<h1>Refused</h1><p>The form's token is missing or stale: reload the page.</p>` }));
                }
                const back = safeBack(form.get('back'));
                const action = ACTIONS.get(form.get('action'));
                if (!action) return refusal(res, new BadRequest(`unknown action "${form.get('action')}"`), back);
                try {
                    const result = await action(form, ctx);
                    const target = new URL(back, 'http://127.0.0.1');
                    target.searchParams.set('note', result);
                    res.writeHead(303, { location: target.pathname + target.search });
                    return res.end();
                } catch (e) {
                    const what = `${form.get('action')} of delivery ${form.get('id') || ''} of tenant ${form.get('tenant') || ''}`;
                    return refusal(res, e, back, `Postgres refused the ${what}:`);
                }
            }
            res.writeHead(405, { allow: 'GET, HEAD, POST', 'content-type': 'text/plain' });
            return res.end('method not allowed: pages are GET, actions are POST /action');
        } catch (e) {
            return refusal(res, e, '/');
        }
    });

    return {
        pool, sampler, server,
        async listen() {
            await new Promise((resolve, reject) => {
                server.once('error', reject);
                server.listen(port, '127.0.0.1', resolve);
            });
            const p = server.address().port;
            allowedHosts = [`127.0.0.1:${p}`, `localhost:${p}`];
            sampler.start();
            return p;
        },
        async close() {
            sampler.stop();
            await new Promise((resolve) => server.close(resolve));
            await pool.end();
        },
    };
}

const isMain = process.argv[1] && import.meta.url === new URL(`file://${(await import('node:fs')).realpathSync(process.argv[1])}`).href;
if (isMain) {
    let opts;
    try {
        opts = parseArgs(process.argv.slice(2));
    } catch (e) {
        console.error(`pg-baton-console: ${e.message}\n${USAGE}`);
        process.exit(2);
    }
    const c = createConsole(opts);
    const port = await c.listen();
    console.log(`pg_baton console listening on http://127.0.0.1:${port}/`);
    const stop = async () => { await c.close(); process.exit(0); };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
}
