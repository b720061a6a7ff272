import { spawn } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import { freePort, uniqueName } from '../helpers/env.js';
import { waitFor } from '../helpers/processes.js';

// GET /metrics through the supervisor: every cluster process answers the aggregation, the queue worker
// roles included, so their metrics (queue gauges, outbox) reach the one scrape an operator makes.
t.test('the supervisor aggregates the HTTP and every queue worker process', async (t) => {
  const port = await freePort();
  const proc = spawn(process.execPath, [path.resolve('dist/src/cli.js'), 'start'], {
    env: { ...process.env, PORT: String(port), ISSUER: `http://127.0.0.1:${port}`, WORKERS: '1', QUEUE_WORKERS: 'true', LOG_LEVEL: 'info', NODE_ENV: 'test', REDIS_PREFIX: `${uniqueName('mc')}:` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  proc.stdout!.on('data', (d) => { stdout += d; });
  proc.stderr!.on('data', () => {});
  t.teardown(() => { if (proc.exitCode === null) proc.kill('SIGKILL'); });
  // Awaited, not timed: five processes start slowly on a loaded 2-core machine.
  await waitFor(() => stdout.includes('svc listening'), 120_000, 100);

  const scrape = async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  // A fresh Redis prefix has no revocation record yet: the first check starts its refill.
  await waitFor(async () => /^svc_revocation_state_loaded 1$/m.test(await scrape()), 30_000, 200)
    .catch(async (err) => { t.comment((await scrape()).split('\n').filter((l) => /revocation|svc_queue_jobs\{.*webhooks|readyz|process_start/.test(l)).join('\n')); t.comment(String(await (await fetch(`http://127.0.0.1:${port}/readyz`)).text())); throw err; });
  const text = await scrape();
  const has = (re: RegExp) => re.test(text);
  // One queue of each worker role: each is reported by the process that consumes it.
  for (const [queue, role] of [['webhooks', 'webhook-worker'], ['email', 'email-worker'], ['tenant-purge', 'jobs-worker'], ['log-archive', 'log-worker']]) {
    t.ok(has(new RegExp(`^svc_queue_jobs\\{[^}]*queue="${queue}"[^}]*state="waiting"[^}]*\\} \\d+`, 'm')), `${role} reports queue ${queue}`);
  }
  t.ok(has(/^svc_outbox_lag_seconds \d/m), 'the webhook worker reports the outbox');
  t.ok(has(/^svc_revocation_state_loaded 1$/m), 'the HTTP process reports its revocation state');
  t.ok(has(/^nodejs_eventloop_lag_p99_seconds \d/m), 'event-loop delay, merged over processes');
  // The supervisor's own process is not in the merge; five processes are (1 HTTP + 4 roles).
  t.ok(has(/^svc_redis_command_duration_seconds_count\{role="worker"\} \d/m) || has(/^svc_postgres_query_duration_seconds_count \d/m), 'store latency from the workers');
  proc.kill('SIGTERM');
  await new Promise((r) => proc.once('exit', r));
});
