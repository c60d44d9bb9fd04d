// Line plots as inline SVG, made on the server.

import { html, Raw } from './html.mjs';

export const COLORS = {
    enqueued: '#0969da', claimed: '#8250df', finished: '#1a7f37', failed: '#cf222e',
    retried: '#bf8700', cancelled: '#6e7781', reaped: '#e16f24', redriven: '#1b7c83',
};

function nice(v) {
    if (v <= 0) return 1;
    const p = 10 ** Math.floor(Math.log10(v));
    for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
}

// series: [{name, points: [[t, y], ...]}]; t in ms.
export function linePlot(series, { width = 440, height = 120, unit = '/s', title = '' } = {}) {
    const all = series.flatMap((s) => s.points);
    if (all.length < 2) {
        return html`<svg class="plot" width="${width}" height="${height}" role="img" aria-label="${title}: no samples yet"><rect width="100%" height="100%" fill="#fafbfc" stroke="#dde1e8"/><text x="10" y="${height / 2}" font-size="12" fill="#6e7781">collecting samples…</text></svg>`;
    }
    const left = 44, right = 6, top = 6, bottom = 18;
    const t0 = Math.min(...all.map((p) => p[0])), t1 = Math.max(...all.map((p) => p[0]));
    const ymax = nice(Math.max(...all.map((p) => p[1])));
    const x = (t) => left + ((t - t0) / Math.max(1, t1 - t0)) * (width - left - right);
    const y = (v) => top + (1 - v / ymax) * (height - top - bottom);
    const lines = series.filter((s) => s.points.length).map((s) => {
        const d = s.points.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(' ');
        return html`<polyline fill="none" stroke="${COLORS[s.name] || '#000'}" stroke-width="1.5" points="${d}" data-series="${s.name}" data-events="${String(s.total ?? '')}"><title>${s.name}</title></polyline>`;
    });
    const span = Math.round((t1 - t0) / 1000);
    return html`<svg class="plot" width="${width}" height="${height}" role="img" aria-label="${title}">
<rect x="${left}" y="${top}" width="${width - left - right}" height="${height - top - bottom}" fill="#fafbfc" stroke="#dde1e8"/>
<line x1="${left}" x2="${width - right}" y1="${y(ymax / 2)}" y2="${y(ymax / 2)}" stroke="#eef0f4"/>
<text x="${left - 4}" y="${top + 9}" font-size="10" text-anchor="end">${String(ymax)}${unit}</text>
<text x="${left - 4}" y="${y(ymax / 2) + 3}" font-size="10" text-anchor="end">${String(ymax / 2)}</text>
<text x="${left - 4}" y="${height - bottom}" font-size="10" text-anchor="end">0</text>
<text x="${left}" y="${height - 4}" font-size="10">−${String(span)} s</text>
<text x="${width - right}" y="${height - 4}" font-size="10" text-anchor="end">now</text>
${lines}</svg>`;
}

// Horizontal bars on a time axis: [{label, start, end, cls}] (ms; end null: still open).
export function timeline(items, { width = 640, row = 18, now = Date.now() } = {}) {
    if (!items.length) return new Raw('');
    const left = 170, right = 8;
    const t0 = Math.min(...items.map((i) => i.start));
    const t1 = Math.max(now, ...items.map((i) => i.end || now));
    const x = (t) => left + ((t - t0) / Math.max(1, t1 - t0)) * (width - left - right);
    const fill = { completed: '#1a7f37', failed: '#cf222e', running: '#8250df', pending: '#0969da' };
    const height = items.length * row + 18;
    const bars = items.map((it, i) => {
        const x0 = x(it.start), x1 = Math.max(x0 + 2, x(it.end || now));
        return html`<text x="${left - 6}" y="${i * row + 13}" font-size="11" text-anchor="end">${it.label}</text>
<rect x="${x0.toFixed(1)}" y="${i * row + 3}" width="${(x1 - x0).toFixed(1)}" height="${row - 6}" fill="${fill[it.cls] || '#6e7781'}"><title>${it.label}: ${it.cls}</title></rect>`;
    });
    const span = ((t1 - t0) / 1000).toFixed(1);
    return html`<svg class="timeline" width="${width}" height="${height}" role="img" aria-label="stage timeline">
${bars}<text x="${left}" y="${height - 3}" font-size="10">start</text><text x="${width - right}" y="${height - 3}" font-size="10" text-anchor="end">+${span} s</text></svg>`;
}
