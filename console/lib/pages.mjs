// The pages. Each takes the request's query (URLSearchParams) and a context
// {pool, sampler, csrf} and returns {title, nav, body}.

import { html, qs, fmtTime, fmtSeconds, fmtJson, errorBox } from './html.mjs';
import * as P from './params.mjs';
import * as Q from './queries.mjs';
import { linePlot, timeline, COLORS } from './svg.mjs';
import { EVENTS } from './sampler.mjs';

const PLOTTED = ['enqueued', 'claimed', 'finished', 'failed'];

function count(n) {
    const v = Number(n);
    return v > Q.COUNT_CAP ? `≥${Q.COUNT_CAP}` : String(v);
}

// A section that may be refused on its own (a role without SELECT on a view).
async function section(fn) {
    try {
        return await fn();
    } catch (e) {
        if (!e.code || e instanceof P.BadRequest) throw e;
        return errorBox(e);
    }
}

function note(q) {
    const n = q.get('note');
    return n ? html`<div class="box note" id="note">${n}</div>` : '';
}

export async function overview(q, ctx) {
    P.known(q, ['note', 'refresh']);
    const refresh = q.has('refresh') ? P.limit(q, 'refresh', { dflt: null, max: 3600 }) : null;
    const healthPart = await section(async () => {
        const rows = await Q.health(ctx.pool);
        return html`<table id="health"><tr><th>check</th><th>status</th><th>value</th><th>detail</th><th>hint</th></tr>
${rows.map((r) => html`<tr data-check="${r.name}"><td>${r.name}</td><td class="${r.status}">${r.status}</td>
<td class="n">${r.value === null ? '' : Number(r.value).toFixed(1)}</td><td>${r.detail}</td><td>${r.hint}</td></tr>`)}</table>`;
    });
    const queuePart = await section(async () => {
        const { rows, leasedCapped } = await Q.queues(ctx.pool);
        if (!rows.length) return html`<p class="muted">No tenant has counted deliveries or bound targets yet.</p>`;
        const table = html`<table id="queues"><tr><th>tenant</th><th>state</th><th>target</th><th>pending</th><th>leased</th>
<th>oldest due pending waits</th>${EVENTS.map((e) => html`<th>${e}</th>`)}</tr>
${rows.map((r) => {
        const latest = ctx.sampler.latest(r.tenant, r.target);
        return html`<tr data-tenant="${r.tenant}" data-target="${r.target}"><td class="mono">${r.tenant}</td><td>${r.state}</td>
<td><a href="/deliveries${qs({ tenant: r.tenant, target: r.target })}">${r.target}</a></td>
<td class="n pending">${count(r.pending)}</td><td class="n leased">${leasedCapped ? `≥${r.leased}` : String(r.leased)}</td>
<td class="n oldest">${fmtSeconds(r.oldest_wait)}</td>
${EVENTS.map((e, i) => html`<td class="n ev-${e}">${latest ? String(latest.values[i]) : ''}</td>`)}</tr>`;
    })}</table>`;
        const cards = rows.map((r) => {
            const rates = ctx.sampler.rates(r.tenant, r.target);
            const grown = ctx.sampler.increase(r.tenant, r.target);
            const series = PLOTTED.map((name) => ({
                name, total: grown[EVENTS.indexOf(name)], points: rates.map((s) => [s.t, s.rates[EVENTS.indexOf(name)]]),
            }));
            return html`<div class="pair" data-tenant="${r.tenant}" data-target="${r.target}"><h3>${r.target} <span class="muted mono">${r.tenant}</span></h3>
${linePlot(series, { title: `throughput of ${r.target}` })}
<div class="legend">${PLOTTED.map((n) => html`<span><svg width="10" height="10"><rect width="10" height="10" fill="${COLORS[n]}"/></svg> ${n}</span>`)}
<span class="muted">per second, sampled every ${String(ctx.sampler.everyMs / 1000)} s</span></div></div>`;
        });
        const samplerError = ctx.sampler.error ? html`<p>The counters could not be sampled:</p>${errorBox(ctx.sampler.error)}` : '';
        return html`${table}<p class="muted">pending is counted up to ${String(Q.COUNT_CAP)} a target, leased up to ${String(Q.COUNT_CAP)} in all;
the event columns are baton.delivery_counters at the last sample (they lag the commits by a reaper round).</p>
${samplerError}<h2>Throughput</h2><div class="pairs">${cards}</div>`;
    });
    return {
        title: 'overview', nav: 'overview', refresh,
        body: html`${note(q)}<h1>Overview</h1><p class="muted">${refresh
            ? html`Reloads every ${String(refresh)} s. <a href="/">stop</a>` : html`<a href="/?refresh=10" id="autorefresh">reload every 10 s</a>`}</p><h2>Health</h2>${healthPart}<h2>Tenants and targets</h2>${queuePart}`,
    };
}

async function pairPicker(ctx, page) {
    const rows = await Q.counters(ctx.pool);
    return html`<p>Pick a tenant and target:</p><ul id="pairs">${rows.map((r) =>
        html`<li><a href="/${page}${qs({ tenant: r.tenant, target: r.target })}">${r.target}</a> <span class="mono muted">${r.tenant}</span></li>`)}</ul>`;
}

function actionForm(ctx, action, fields, label, back) {
    return html`<form class="inline" method="post" action="/action">
<input type="hidden" name="csrf" value="${ctx.csrf}"><input type="hidden" name="action" value="${action}">
${Object.entries(fields).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}
<input type="hidden" name="back" value="${back}"><button type="submit" data-action="${action}">${label}</button></form>`;
}

function deliveryActions(ctx, d, back) {
    const out = [];
    if (d.status === 'pending' || d.status === 'claimed') {
        out.push(actionForm(ctx, 'cancel', { tenant: d.tenant, id: d.id }, 'cancel', back));
    }
    if (d.status === 'claimed') {
        out.push(actionForm(ctx, 'retry', { tenant: d.tenant, id: d.id, generation: d.generation }, 'retry now', back));
    }
    if (d.status === 'failed' || d.status === 'cancelled') {
        out.push(actionForm(ctx, 'redrive', { tenant: d.tenant, target: d.target, id: d.id }, 'redrive', back));
    }
    return out;
}

export async function deliveries(q, ctx, url) {
    P.known(q, ['tenant', 'target', 'state', 'prefix', 'id', 'limit', 'after', 'note']);
    const tenant = P.uuid(q, 'tenant');
    const target = P.text(q, 'target');
    const state = P.oneOf(q, 'state', P.DELIVERY_STATES);
    const prefix = P.text(q, 'prefix');
    const id = P.id(q, 'id');
    const limit = P.limit(q);
    if (!tenant || !target) {
        if (tenant || target || state || prefix || id) {
            throw new P.BadRequest('parameters "tenant" and "target" are required together');
        }
        return { title: 'deliveries', nav: 'deliveries', body: html`<h1>Deliveries</h1>${await pairPicker(ctx, 'deliveries')}` };
    }
    const filter = { tenant, target, state, prefix, limit, upper: prefix === null ? null : P.prefixUpperBound(prefix) };
    const listing = Q.deliveryListing(filter);
    filter.after = P.cursor(q, 'after', listing.cursor);
    const back = url.pathname + url.search;

    let result;
    if (id) {
        const d = await Q.delivery(ctx.pool, tenant, id);
        result = { rows: d && d.id ? [d] : [], next: null, order: 'by id' };
    } else {
        result = await listing.run(ctx.pool, filter);
    }
    const stateOpt = (s) => html`<option value="${s}" ${s === state ? html`selected` : ''}>${s}</option>`;
    const form = html`<form class="filters" method="get" action="/deliveries" id="filters">
<input type="hidden" name="tenant" value="${tenant}"><input type="hidden" name="target" value="${target}">
<label>state <select name="state"><option value="">any</option>${P.DELIVERY_STATES.map(stateOpt)}</select></label>
<label>dedup key starts with <input type="text" name="prefix" value="${prefix || ''}"></label>
<label>id <input type="text" name="id" value="${id || ''}" style="width:8em"></label>
<label>per page <input type="text" name="limit" value="${String(limit)}" style="width:4em"></label>
<button type="submit">filter</button></form>`;
    const rows = result.rows.map((d) => html`<tr data-id="${d.id}">
<td class="n"><a href="/delivery${qs({ tenant: d.tenant, id: d.id })}">${d.id}</a></td>
<td class="dedup mono">${d.dedup_key}</td><td class="status st-${d.status}">${d.status}</td>
<td class="n">${String(d.attempts)}/${String(d.max_attempts)}</td><td class="n">${String(d.priority)}</td>
<td class="n">${d.generation}</td><td class="t">${fmtTime(d.created_at)}</td>
<td class="payload mono">${fmtJson(d.payload, 160)}</td><td class="error">${d.last_error}</td>
<td>${deliveryActions(ctx, d, back)}</td></tr>`);
    const nextLink = result.next
        ? html`<a id="next" href="/deliveries${qs({ tenant, target, state, prefix, limit: limit === 50 ? null : limit, after: P.makeCursor(result.next) })}">next page →</a>`
        : html`<span class="muted" id="end">end of the list</span>`;
    return {
        title: `deliveries of ${target}`, nav: 'deliveries',
        body: html`${note(q)}<h1>Deliveries of <span class="mono">${target}</span> <span class="muted mono">${tenant}</span></h1>
${form}<p class="muted">${result.rows.length ? `${result.rows.length} shown, ${result.order}` : 'no delivery here matches'}${filter.after ? ' (continued)' : ''}.
A filtered page looks at ${String(Q.WINDOW)} deliveries at most: an empty page with a next link means the search goes on.</p>
<table id="deliveries"><tr><th>id</th><th>dedup key</th><th>status</th><th>attempts</th><th>priority</th><th>generation</th><th>created</th><th>payload</th><th>last error</th><th>actions</th></tr>
${rows}</table>${nextLink}`,
    };
}

export async function deliveryPage(q, ctx, url) {
    P.known(q, ['tenant', 'id', 'note']);
    const tenant = P.uuid(q, 'tenant', { required: true });
    const id = P.id(q, 'id');
    if (!id) throw new P.BadRequest('parameter "id" is required (a positive integer)');
    const d = await Q.delivery(ctx.pool, tenant, id);
    const back = url.pathname + url.search;
    const field = (k, v) => html`<tr><th>${k}</th><td class="mono f-${k}">${v}</td></tr>`;
    return {
        title: `delivery ${id}`, nav: 'deliveries',
        body: html`${note(q)}<h1>Delivery ${d.id}</h1><table id="delivery">
${field('tenant', d.tenant)}${field('target', html`<a href="/deliveries${qs({ tenant: d.tenant, target: d.target })}">${d.target}</a>`)}
${field('dedup_key', d.dedup_key)}${field('status', d.status)}${field('generation', d.generation)}
${field('attempts', `${d.attempts} of ${d.max_attempts}`)}${field('priority', String(d.priority))}
${field('run_after', fmtTime(d.run_after))}${field('lease_until', fmtTime(d.lease_until))}${field('created_at', fmtTime(d.created_at))}
${field('run_id', d.run_id)}${field('payload', html`<pre>${JSON.stringify(d.payload, null, 2)}</pre>`)}
${field('binding', html`<pre>${JSON.stringify(d.binding, null, 2)}</pre>`)}
${field('result', d.result === null ? '' : html`<pre>${JSON.stringify(d.result, null, 2)}</pre>`)}
${field('last_error', d.last_error)}</table><p>${deliveryActions(ctx, d, back)}</p>`,
    };
}

async function tenantPicker(ctx, page) {
    const rows = await Q.tenants(ctx.pool);
    return html`<p>Pick a tenant:</p><ul id="tenants">${rows.map((r) =>
        html`<li><a class="mono" href="/${page}${qs({ tenant: r.tenant })}">${r.tenant}</a> ${r.state}</li>`)}</ul>`;
}

export async function runs(q, ctx) {
    P.known(q, ['tenant', 'state', 'limit', 'after']);
    const tenant = P.uuid(q, 'tenant');
    const state = P.oneOf(q, 'state', P.RUN_STATES);
    const limit = P.limit(q);
    const after = P.cursor(q, 'after', ['s']);
    if (after && !/^[0-9a-f-]{36}$/.test(after[0])) throw new P.BadRequest('parameter "after" is not a cursor this page made');
    if (!tenant) {
        if (state || after) throw new P.BadRequest('parameter "tenant" is required');
        return { title: 'runs', nav: 'runs', body: html`<h1>Runs</h1>${await tenantPicker(ctx, 'runs')}` };
    }
    const result = await Q.runs(ctx.pool, { tenant, state, limit, after });
    const stateOpt = (s) => html`<option value="${s}" ${s === state ? html`selected` : ''}>${s}</option>`;
    const nextLink = result.next
        ? html`<a id="next" href="/runs${qs({ tenant, state, limit: limit === 50 ? null : limit, after: P.makeCursor(result.next) })}">next page →</a>`
        : html`<span class="muted" id="end">end of the list</span>`;
    return {
        title: 'runs', nav: 'runs',
        body: html`<h1>Runs <span class="muted mono">${tenant}</span></h1>
<form class="filters" method="get" action="/runs"><input type="hidden" name="tenant" value="${tenant}">
<label>status <select name="state"><option value="">any</option>${P.RUN_STATES.map(stateOpt)}</select></label>
<label>per page <input type="text" name="limit" value="${String(limit)}" style="width:4em"></label><button type="submit">filter</button></form>
<table id="runs"><tr><th>run</th><th>workflow</th><th>version</th><th>status</th><th>owner</th><th>generation</th><th>lease until</th><th>created</th><th>finished</th></tr>
${result.rows.map((r) => html`<tr data-run="${r.id}"><td class="mono"><a href="/run${qs({ tenant, id: r.id })}">${r.id}</a></td>
<td>${r.workflow}</td><td class="n">${String(r.version)}</td><td class="status">${r.status}</td><td>${r.owner}</td>
<td class="n">${r.generation}</td><td class="t">${fmtTime(r.lease_until)}</td><td class="t">${fmtTime(r.created_at)}</td><td class="t">${fmtTime(r.finished_at)}</td></tr>`)}
</table>${nextLink}`,
    };
}

export async function runPage(q, ctx) {
    P.known(q, ['tenant', 'id']);
    const tenant = P.uuid(q, 'tenant', { required: true });
    const id = P.uuid(q, 'id', { required: true });
    const r = await Q.run(ctx.pool, tenant, id);
    const stages = await Q.runHistory(ctx.pool, tenant, id);
    const doubt = await Q.markersInDoubt(ctx.pool, tenant, id);
    const items = stages.map((s) => ({
        label: `${s.stage} #${s.entry_seq}`,
        start: new Date(s.created_at).getTime(),
        end: s.completed_at ? new Date(s.completed_at).getTime() : (s.status === 'failed' || !s.is_current ? new Date(s.started_at || s.created_at).getTime() : null),
        cls: s.status,
    }));
    return {
        title: `run ${id}`, nav: 'runs',
        body: html`<h1>Run <span class="mono">${r.id}</span></h1>
<table id="run"><tr><th>workflow</th><td>${r.workflow} v${String(r.version)}</td></tr><tr><th>status</th><td class="status">${r.status}</td></tr>
<tr><th>owner</th><td>${r.owner}</td></tr><tr><th>generation</th><td>${r.generation}</td></tr>
<tr><th>lease until</th><td class="t">${fmtTime(r.lease_until)}</td></tr><tr><th>created</th><td class="t">${fmtTime(r.created_at)}</td></tr>
<tr><th>inputs</th><td><pre>${JSON.stringify(r.inputs, null, 2)}</pre></td></tr><tr><th>state</th><td><pre>${JSON.stringify(r.state, null, 2)}</pre></td></tr></table>
<h2>Stages</h2>${timeline(items)}
<table id="stages"><tr><th>stage id</th><th>stage</th><th>entry</th><th>status</th><th>current</th><th>attempt</th><th>started</th><th>completed</th><th>error</th><th>retry at</th><th>decision</th></tr>
${stages.map((s) => html`<tr data-stage="${s.id}"><td class="n">${s.id}</td><td>${s.stage}</td><td class="n">${String(s.entry_seq)}</td><td class="status">${s.status}</td>
<td>${s.is_current ? 'yes' : ''}</td><td class="n">${String(s.attempt)}/${String(s.max_attempts)}</td><td class="t">${fmtTime(s.started_at)}</td><td class="t">${fmtTime(s.completed_at)}</td>
<td class="error">${s.error}</td><td class="t">${fmtTime(s.retry_at)}</td><td class="decision mono">${fmtJson(s.transition, 300)}</td></tr>`)}</table>
<h2>Markers in doubt</h2>${doubt.length ? html`<table id="doubt"><tr><th>entry</th><th>position</th><th>stage</th><th>kind</th><th>operation id</th><th>claimed under generation</th><th>claimed at</th></tr>
${doubt.map((m) => html`<tr><td class="n">${m.entry_id}</td><td class="n">${String(m.position)}</td><td>${m.stage}</td><td>${m.kind}</td><td class="mono">${m.operation_id}</td><td class="n">${m.generation}</td><td class="t">${fmtTime(m.claimed_at)}</td></tr>`)}</table>
<p class="muted">The run's owner finds out whether each action happened and records it with baton.resolve_marker().</p>`
        : html`<p id="no-doubt">none</p>`}`,
    };
}

export async function schedulesPage(q, ctx) {
    P.known(q, ['tenant', 'limit', 'after']);
    const tenant = P.uuid(q, 'tenant');
    const limit = P.limit(q, 'limit', { dflt: 100, max: 500 });
    const after = P.cursor(q, 'after', ['s', 's']);
    if (after && !/^[0-9a-f-]{36}$/.test(after[0])) throw new P.BadRequest('parameter "after" is not a cursor this page made');
    const result = await Q.schedules(ctx.pool, { tenant, limit, after });
    const nextLink = result.next
        ? html`<a id="next" href="/schedules${qs({ tenant, limit: limit === 100 ? null : limit, after: P.makeCursor(result.next) })}">next page →</a>`
        : html`<span class="muted" id="end">end of the list</span>`;
    return {
        title: 'schedules', nav: 'schedules',
        body: html`<h1>Schedules</h1><table id="schedules"><tr><th>tenant</th><th>name</th><th>target</th><th>spec</th><th>time zone</th><th>next fire</th><th>last fired</th><th>last delivery</th></tr>
${result.rows.map((s) => html`<tr data-name="${s.name}"><td class="mono">${s.tenant}</td><td>${s.name}</td><td>${s.target}</td><td class="mono">${s.spec}</td><td>${s.time_zone}</td>
<td class="next">${fmtTime(s.next_fire_at)}</td><td class="last">${fmtTime(s.last_fired_at)}</td>
<td>${s.last_delivery_id ? html`<a href="/delivery${qs({ tenant: s.tenant, id: s.last_delivery_id })}">${s.last_delivery_id}</a>` : ''}</td></tr>`)}</table>${nextLink}`,
    };
}
