// The test's worker (test/node/run.sh), run from the scratch project where the pg-baton
// tarball is installed: the library's main() with a handler per target, configured
// from the environment (BATON_TARGET picks some of na, nb, w). Each handler does what
// the payload says: waits payload.sleep seconds (or until its signal aborts), throws
// while the attempt is at most payload.fail_attempts, resolves with a value JSON cannot
// hold (a BigInt) while the attempt is at most payload.bigint_attempts; its result names
// its target, the item's id as the handler saw it, and how many handlers ran at once
// when it started.
import { main } from 'pg-baton';

let inflight = 0;

const handlerOf = (target) => async (item, signal) => {
  inflight += 1;
  const running = inflight;
  try {
    const ms = Number(item.payload.sleep ?? 0) * 1000;
    await new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
    });
    if (item.attempt <= Number(item.payload.fail_attempts ?? 0)) {
      throw new Error(`test failure on attempt ${item.attempt}`);
    }
    if (item.attempt <= Number(item.payload.bigint_attempts ?? 0)) return { n: 1n };
    return { handled_by: target, target: item.target, id: item.id, running };
  } finally {
    inflight -= 1;
  }
};

main({ na: handlerOf('na'), nb: handlerOf('nb'), w: handlerOf('w') });
