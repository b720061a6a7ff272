import { spawn } from 'node:child_process';
import fs from 'node:fs';
import t from 'tap';

// The whole admin test suite with DATABASE_READ_URL on a private streaming replica (ops/replica-suite.mjs
// starts the primary and the pg_basebackup replica and removes both): every admin read that the replica
// serves must give what the suite expects from the primary.
t.setTimeout(900_000);

t.test('the admin suite passes with its reads on a replica', async (t) => {
  const files = fs.readdirSync('dist/test/admin').filter((f) => f.endsWith('.test.js')).map((f) => `dist/test/admin/${f}`);
  let out = '';
  const code = await new Promise<number | null>((resolve) => {
    const p = spawn(process.execPath, ['ops/replica-suite.mjs', ...files], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TEST_LOG_LEVEL: 'error' } });
    p.stdout!.on('data', (d) => { out += d; });
    p.stderr!.on('data', (d) => { out += d; });
    p.on('exit', resolve);
  });
  t.equal(code, 0, code === 0 ? 'every admin test file passed' : out.slice(-4000));
  const served = Number(/the replica served (\d+) transactions/.exec(out)?.[1] ?? 0);
  t.ok(served > 0, `the replica served ${served} transactions`);
});
