import { spawn } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { bootstrap } from '../../src/bootstrap.js';
import { createSql } from '../../src/sql.js';
import { freePort, testConfig, uniqueName } from '../helpers/env.js';
import { waitFor } from '../helpers/processes.js';
import { postForm } from '../helpers/tokens.js';

const cli = path.resolve('dist/src/cli.js');
// Reports, as the process exits, whether it ended by itself, which intervals were never cleared and what libuv still held.
const probe = pathToFileURL(path.resolve('dist/test/ops/shutdown-probe.js')).href;

interface ProbeReport { code: number; forced: boolean; intervals: string[]; resources: string[] }


t.test('SIGTERM: the HTTP process closes everything it opened, then ends by itself with code 0', async (t) => {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const config = testConfig({ PORT: String(port), ISSUER: url });
  const sql = createSql(config, { max: 2 });
  t.teardown(() => sql.end({ timeout: 5 }));
  const tenant = await bootstrap(config, sql, uniqueName('shutdown'));

  // The real entry, as the supervisor starts an HTTP process (SVC_ROLE=http), not a server inside this test.
  const proc = spawn(process.execPath, ['--import', probe, cli, 'start'], {
    env: {
      ...process.env, NODE_ENV: 'test', SVC_ROLE: 'http', HOST: '127.0.0.1', PORT: String(port), ISSUER: url,
      REDIS_PREFIX: config.redisPrefix, LOG_LEVEL: 'info', CRYPTO_THREADS: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout!.on('data', (d) => { stdout += d; });
  proc.stderr!.on('data', (d) => { stderr += d; });
  t.teardown(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  await waitFor(async () => (await fetch(`${url}/healthz`)).ok, 20_000, 100);

  // Open what a process opens on first use too: the login mail queue (a code request), the signing threads (a token).
  const gen = await fetch(`${url}/email-code/generate`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `${uniqueName('shutdown')}@example.com`, client_id: tenant.clients.web.client_id }),
  });
  t.equal(gen.status, 200, 'a login code was queued: the mail queue is open');
  const tok = await postForm(`${url}/token`, tenant.admin_client, { grant_type: 'client_credentials', scope: 'admin' });
  t.equal(tok.status, 200, 'a token was signed');

  const sent = Date.now();
  proc.kill('SIGTERM');
  const limit = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 15_000).unref());
  const result = await Promise.race([exited, limit]);
  if (result === 'timeout') { t.fail(`still running 15s after SIGTERM\n${stdout}\n${stderr}`); return; }
  t.equal(result.signal, null, 'not killed by the signal');
  t.equal(result.code, 0, 'exit code 0');
  t.ok(Date.now() - sent < 5000, `exited promptly (${Date.now() - sent} ms)`);
  t.match(stdout, /http process stopped/, 'shutdown went through the lifecycle');
  t.notMatch(stdout, /handles left open/, 'no handle was reported left open');

  const line = /svc-shutdown-probe (.*)/.exec(stderr);
  if (!line) { t.fail(`no probe report\n${stderr}`); return; }
  const report = JSON.parse(line[1]!) as ProbeReport;
  // A timer or socket left open (ref'd) keeps the event loop alive: the process would only end when the
  // fallback in src/main.ts forces it, which the probe sees as process.exit.
  t.equal(report.forced, false, 'the process ended by itself: nothing held the event loop after close()');
  t.same(report.resources, [], 'no handle left at exit');
  // An unref'd interval does not hold the process, but it is work that keeps running until the process dies.
  t.same(report.intervals, [], 'every interval started was cleared');
});
