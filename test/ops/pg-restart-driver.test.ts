import t from 'tap';
import { createSql } from '../../src/sql.js';
import { PrivatePostgres, waitFor } from '../helpers/processes.js';

// A real Postgres restart (pg_ctl stop -m fast, then start on the same port and data) under statements
// and transactions from six loops on our client (src/sql.ts). With postgres.js 3.4.9 as installed
// this ended the process with "TypeError: Cannot read properties of null (reading 'write')" from an
// immediate (the ROLLBACK of a transaction whose connection had closed), left statements waiting up to
// 20 s after Postgres was back (a stale statement kept as current; reconnect backoff up to 20 s), and
// poisoned connections that never flushed again. patches/postgres+3.4.9.patch (applied by patch-package at
// install) repairs the driver.
// Asserted: the process survives, every statement settles within SETTLE_MS whichever phase it started
// in, and statements succeed again soon after the start.
const SETTLE_MS = 5_000;
const pg = await PrivatePostgres.primary();
t.teardown(() => pg.destroy());
const sql = createSql({ databaseUrl: pg.url(), databasePoolSize: 4 });
t.teardown(() => sql.end({ timeout: 1 }));

const uncaught: string[] = [];
const onUncaught = (err: Error) => { uncaught.push(String(err?.stack ?? err)); };
process.on('uncaughtException', onUncaught);
t.teardown(() => { process.off('uncaughtException', onUncaught); });

t.test('statements and transactions through a fast restart and a crash restart', async (t) => {
  let phase = 'up';
  let running = true;
  const slow: string[] = [];
  const outcomes = new Map<string, number>();
  let okAfter = 0;
  const loop = async (i: number) => {
    while (running) {
      const started = Date.now();
      const from = phase;
      let r = 'ok';
      try {
        if (i % 2) await sql.begin(async (tx) => { await tx`select pg_sleep(0.005)`; await tx`select 1`; });
        else await sql`select pg_sleep(0.002)`;
        if (phase === 'after') okAfter++;
      } catch (err) {
        r = String((err as { code?: string }).code ?? (err as Error).message);
        // A failed statement is retried at once by the loop: give the event loop a turn.
        await new Promise((resolve) => setImmediate(resolve));
      }
      const ms = Date.now() - started;
      outcomes.set(`${from}->${phase} ${r}`, (outcomes.get(`${from}->${phase} ${r}`) ?? 0) + 1);
      if (ms > SETTLE_MS) slow.push(`${from}->${phase} ${r} ${ms} ms`);
    }
  };
  const loops = [0, 1, 2, 3, 4, 5].map(loop);
  const restart = async (mode: 'fast' | 'immediate') => {
    const before = okAfter;
    phase = 'stopping';
    await pg.stop(mode);
    phase = 'down';
    const failed = [...outcomes.values()].reduce((a, b) => a + b, 0);
    await waitFor(() => [...outcomes.values()].reduce((a, b) => a + b, 0) > failed + 20, 10_000, 10);
    await pg.start();
    phase = 'after';
    const back = Date.now();
    await waitFor(() => okAfter > before + 20, 10_000, 10);
    return Date.now() - back;
  };
  const fastMs = await restart('fast');
  const crashMs = await restart('immediate');
  running = false;
  await Promise.all(loops);
  t.same(uncaught, [], 'no uncaught exception');
  t.same(slow, [], `every statement settled within ${SETTLE_MS} ms`);
  t.ok(fastMs < 5_000, `statements succeed again ${fastMs} ms after a fast restart`);
  t.ok(crashMs < 5_000, `and ${crashMs} ms after a crash restart`);
  t.comment(JSON.stringify(Object.fromEntries(outcomes)));
});
