import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import t from 'tap';
import { startSmtpSink } from '../../src/mail/dev-sink.js';
import { freePort } from '../helpers/env.js';
import { waitFor } from '../helpers/processes.js';
import { startTestServer } from '../helpers/server.js';
import { adminToken, setupTenant } from '../helpers/tokens.js';

// Issue 21 item 22 (workers): a two-process `svc start` with its queue workers; while users are created
// (user.created webhooks) and one-time codes are requested (emails), the webhook worker, the email worker
// and an HTTP process are SIGKILLed. The supervisor replaces them, and no webhook delivery and no email
// is lost. Bounded by BullMQ's stalled-job detection (webhook worker: 15 s lock + 5 s check; email
// worker: 10 s + 5 s), so the waits allow 45 s.
const srv = await startTestServer();
t.teardown(() => srv.close());
const b = await setupTenant(srv, 'wfault');
const token = await adminToken(srv, { tenantId: b.tenant_id, permissions: ['admin:*'] });
const sink = await startSmtpSink();
t.teardown(() => sink.close());

const received = new Set<string>();
const receiver = http.createServer((req, res) => {
  let body = '';
  req.on('data', (d) => { body += d; });
  req.on('end', () => { try { const e = JSON.parse(body); if (e.event === 'user.created') received.add(String(e.data.user_id)); } catch { /* not ours */ } res.end('ok'); });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
t.teardown(() => new Promise<void>((r) => receiver.close(() => r())));
const hookUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;

const port = await freePort();
const proc = spawn(process.execPath, [path.resolve('dist/src/cli.js'), 'start'], {
  env: { ...process.env, PORT: String(port), ISSUER: srv.config.issuer, WORKERS: '2', QUEUE_WORKERS: 'true', LOG_LEVEL: 'info', NODE_ENV: 'test', REDIS_PREFIX: srv.config.redisPrefix, SMTP_URL: `smtp://127.0.0.1:${sink.port}`, CRYPTO_QUEUE_WAIT_MS: '0' },
  stdio: ['ignore', 'pipe', 'pipe'],
});
let stdout = '';
proc.stdout!.on('data', (d) => { stdout += d; });
proc.stderr!.on('data', () => {});
t.teardown(() => { if (proc.exitCode === null) proc.kill('SIGKILL'); });
// Five processes start (two HTTP, three queue workers); under a loaded CI machine that took over 30 s once.
await waitFor(() => stdout.includes('svc listening'), 60_000, 50);
const base = `http://127.0.0.1:${port}`;

/** The supervisor's children by role (SVC_ROLE in their environment). */
function byRole(): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  const pids = spawnSync('pgrep', ['-P', String(proc.pid)], { encoding: 'utf8' }).stdout.trim().split('\n').filter(Boolean).map(Number);
  for (const pid of pids) {
    let role = 'unknown';
    try { role = /SVC_ROLE=([a-z-]+)/.exec(fs.readFileSync(`/proc/${pid}/environ`, 'utf8'))?.[1] ?? 'unknown'; } catch { /* gone */ }
    (out[role] ??= []).push(pid);
  }
  return out;
}
const call = async (method: string, p: string, body?: unknown) => {
  const res = await fetch(base + p, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: await res.json().catch(() => null) as any };
};

t.test('SIGKILLed workers and HTTP process lose no webhook delivery and no email', async (t) => {
  const roles = byRole();
  t.equal(roles.http?.length, 2, 'two HTTP processes');
  t.ok(roles['webhook-worker']?.length && roles['email-worker']?.length, 'webhook and email workers');
  const hook = await call('POST', '/api/admin/webhooks', { name: 'faults', url: hookUrl, events: ['user.created'] });
  t.equal(hook.status, 201);
  const users: string[] = [];
  const emails: string[] = [];
  const killed: number[] = [];
  for (let i = 0; i < 30; i++) {
    if (i === 8) { const pid = byRole()['webhook-worker']![0]!; process.kill(pid, 'SIGKILL'); killed.push(pid); }
    if (i === 16) { const pid = byRole()['email-worker']![0]!; process.kill(pid, 'SIGKILL'); killed.push(pid); }
    if (i === 24) { const pid = byRole().http![0]!; process.kill(pid, 'SIGKILL'); killed.push(pid); }
    // An HTTP process being killed may reset a request in flight on it: retried once, as clients do.
    const u = await call('POST', '/api/admin/users', { email: `wf-${i}-${Date.now()}@example.test` }).catch(() => call('POST', '/api/admin/users', { email: `wf-${i}-r-${Date.now()}@example.test` }));
    if (u.status === 201) users.push(u.body.id);
    if (i % 3 === 0) {
      const email = `code-${i}-${Date.now()}@example.test`;
      const send = () => fetch(`${base}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, client_id: b.clients.web.client_id }) });
      const r = await send().catch(send);
      if (r.status === 200) emails.push(email);
    }
  }
  t.ok(users.length >= 29, `${users.length} users created`);
  t.ok(emails.length >= 9, `${emails.length} codes requested`);
  const started = Date.now();
  await waitFor(() => users.every((u) => received.has(u)), 45_000, 100).catch(() => {});
  const hookMs = Date.now() - started;
  t.same(users.filter((u) => !received.has(u)), [], `every user.created delivered (${hookMs} ms after the last)`);
  await waitFor(() => emails.every((e) => sink.messages.some((m) => m.to.includes(e))), 45_000, 100).catch(() => {});
  const mailMs = Date.now() - started;
  t.same(emails.filter((e) => !sink.messages.some((m) => m.to.includes(e))), [], `every code mailed (${mailMs} ms after the last)`);
  await waitFor(() => { const r = byRole(); return r.http?.length === 2 && r['webhook-worker']?.length === 1 && r['email-worker']?.length === 1 && !Object.values(r).flat().some((p) => killed.includes(p)); }, 20_000, 100);
  t.pass('the supervisor replaced every killed process');
  t.comment(`recovery: webhooks complete ${hookMs} ms, emails ${mailMs} ms after the last request; killed ${killed.length} processes`);
});
