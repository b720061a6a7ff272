import t from 'tap';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

// Issue 21 item 13: `svc start` without NODE_ENV runs as production (no X-Debug details, no development
// key); `npm start` (ops/run.mjs) sets development explicitly and says so.
const root = path.resolve(import.meta.dirname, '..', '..', '..');

t.test('svc start defaults NODE_ENV to production', async (t) => {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', ISSUER: 'http://127.0.0.1:1' };
  const r = spawnSync(process.execPath, [path.join(root, 'dist', 'src', 'cli.js'), 'start'], { env, encoding: 'utf8', timeout: 20_000 });
  t.not(r.status, 0, 'refuses to start unconfigured');
  t.match(r.stderr + r.stdout, /ISSUER must be https in production|KEY_ENCRYPTION_KEY/, 'the production rules apply');
});

t.test('npm start sets development explicitly and says so in its banner', async (t) => {
  const src = fs.readFileSync(path.join(root, 'ops', 'run.mjs'), 'utf8');
  t.match(src, /NODE_ENV: process\.env\.NODE_ENV \|\| 'development'/);
  t.match(src, /NODE_ENV=development \(set explicitly by npm start\)/);
});
