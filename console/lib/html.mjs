// HTML building: every interpolated value is escaped unless it is a Raw made by html``.

export class Raw {
    constructor(text) { this.text = text; }
    toString() { return this.text; }
}

const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function esc(value) {
    if (value === null || value === undefined) return '';
    return String(value).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

function part(value) {
    if (value instanceof Raw) return value.text;
    if (Array.isArray(value)) return value.map(part).join('');
    return esc(value);
}

// Tagged template: html`<td>${text}</td>` escapes text; nested html`` and arrays of them pass.
export function html(strings, ...values) {
    let out = strings[0];
    for (let i = 0; i < values.length; i++) out += part(values[i]) + strings[i + 1];
    return new Raw(out);
}

// A query string from an object, skipping empty values.
export function qs(params) {
    const u = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) {
        if (v !== null && v !== undefined && v !== '') u.set(k, String(v));
    }
    const s = u.toString();
    return s ? `?${s}` : '';
}

export function fmtTime(t) {
    if (!t) return '';
    const d = t instanceof Date ? t : new Date(t);
    return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export function fmtSeconds(s) {
    if (s === null || s === undefined) return '';
    s = Number(s);
    if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min ${Math.floor(s % 60)} s`;
    if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
    return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

export function fmtJson(v, max = 0) {
    if (v === null || v === undefined) return '';
    const s = JSON.stringify(v);
    return max && s.length > max ? `${s.slice(0, max)}…` : s;
}

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:8px 16px;display:flex;gap:20px;align-items:center}
header a{color:#cfd6e4;text-decoration:none}header a.on{color:#fff;font-weight:600}
header .db{margin-left:auto;color:#8e99ad;font-size:12px}
main{padding:12px 16px}h1{font-size:20px;margin:4px 0 12px}h2{font-size:16px;margin:18px 0 8px}
table{border-collapse:collapse;background:#fff;margin-bottom:12px}
th,td{border:1px solid #dde1e8;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#eef0f4;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}
.ok{color:#1a7f37}.warn{color:#9a6700;font-weight:600}.critical{color:#cf222e;font-weight:700}
.st-pending{color:#0969da}.st-claimed{color:#8250df}.st-finished{color:#1a7f37}.st-failed{color:#cf222e}.st-cancelled{color:#6e7781}
.box{background:#fff;border:1px solid #dde1e8;padding:8px 12px;margin-bottom:12px}
.err{border-color:#cf222e;background:#fff5f5}.note{border-color:#1a7f37;background:#f3fbf4}
.err dt{font-weight:600}.err dd{margin:0 0 4px 0}
code,pre,.mono{font-family:ui-monospace,monospace;font-size:12px}pre{white-space:pre-wrap;margin:0;max-width:60em}
form.inline{display:inline;margin:0}button{font-size:12px;padding:1px 6px}
form.filters label{margin-right:10px}input[type=text]{width:16em}
.pairs{display:grid;grid-template-columns:repeat(auto-fill,minmax(470px,1fr));gap:12px}
.pair{background:#fff;border:1px solid #dde1e8;padding:8px 10px}.pair h3{font-size:14px;margin:0 0 6px}
.legend span{margin-right:10px;font-size:12px}.muted{color:#6e7781}td.t{white-space:nowrap}
`;

export function layout({ title, nav, db, body, refresh = null }) {
    const link = (href, name) => html`<a href="${href}" class="${nav === name ? 'on' : ''}">${name}</a>`;
    return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title} · pg_baton console</title>
<meta name="viewport" content="width=device-width,initial-scale=1">${refresh ? html`<meta http-equiv="refresh" content="${String(refresh)}">` : ''}
<style>${new Raw(STYLE)}</style></head>
<body><header><strong>pg_baton</strong>${link('/', 'overview')}${link('/deliveries', 'deliveries')}${link('/runs', 'runs')}${link('/schedules', 'schedules')}<span class="db">${db}</span></header>
<main>${body}</main></body></html>`;
}

// A refusal of Postgres or of the console, with what Postgres said about it.
export function errorBox(err) {
    return html`<div class="box err" id="error"><dl>
${err.code ? html`<dt>SQLSTATE</dt><dd class="mono" id="sqlstate">${err.code}</dd>` : ''}
<dt>message</dt><dd id="message">${err.message}</dd>
${err.detail ? html`<dt>detail</dt><dd id="detail">${err.detail}</dd>` : ''}
${err.hint ? html`<dt>hint</dt><dd id="hint">${err.hint}</dd>` : ''}
</dl></div>`;
}
