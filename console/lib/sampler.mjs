// Samples baton.delivery_counters every few seconds into memory, so that the overview
// can plot rates: the counters only grow, so a rate is the difference of two samples
// over the time between them.

import { counters } from './queries.mjs';

export const EVENTS = ['enqueued', 'claimed', 'finished', 'failed', 'retried', 'cancelled', 'reaped', 'redriven'];

export class Sampler {
    constructor(pool, { everyMs = 5000, keep = 180 } = {}) {
        this.pool = pool;
        this.everyMs = everyMs;
        this.keep = keep;
        this.series = new Map(); // "tenant target" -> [{t, values}]
        this.error = null;
        this.timer = null;
        this.stopped = false;
    }

    start() {
        this.stopped = false;
        const tick = async () => {
            await this.sample();
            if (this.stopped) return; // stopped while sampling: no next tick
            this.timer = setTimeout(tick, this.everyMs);
            this.timer.unref();
        };
        return tick();
    }

    stop() {
        this.stopped = true;
        clearTimeout(this.timer);
    }

    async sample() {
        try {
            const rows = await counters(this.pool);
            const t = Date.now();
            for (const row of rows) {
                const key = `${row.tenant} ${row.target}`;
                let list = this.series.get(key);
                if (!list) this.series.set(key, (list = []));
                list.push({ t, values: EVENTS.map((e) => Number(row[e])) });
                if (list.length > this.keep) list.shift();
            }
            this.error = null;
        } catch (e) {
            this.error = e;
        }
    }

    // Per second rates of each event between consecutive samples of one pair:
    // [{t, rates: [...]}], oldest first.
    rates(tenant, target) {
        const list = this.series.get(`${tenant} ${target}`) || [];
        const out = [];
        for (let i = 1; i < list.length; i++) {
            const dt = (list[i].t - list[i - 1].t) / 1000;
            out.push({ t: list[i].t, rates: list[i].values.map((v, j) => Math.max(0, v - list[i - 1].values[j]) / dt) });
        }
        return out;
    }

    // How much each counter grew over the samples kept.
    increase(tenant, target) {
        const list = this.series.get(`${tenant} ${target}`) || [];
        if (list.length < 2) return EVENTS.map(() => 0);
        return list[list.length - 1].values.map((v, j) => v - list[0].values[j]);
    }

    latest(tenant, target) {
        const list = this.series.get(`${tenant} ${target}`) || [];
        return list.length ? list[list.length - 1] : null;
    }
}
