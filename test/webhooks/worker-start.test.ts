import t from 'tap';
import { fork, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { testConfig } from '../helpers/env.js';
import { PrivateRedis, waitFor } from '../helpers/processes.js';
import { addWebhook, createTenant, emit, isolatedDatabase, startReceiver, testSql } from './fixtures.js';

// An operator's first look at the logs: a webhook worker started on a fresh database logs no warning
// (the relay used to run its first pass before its queue connection was up: "relay pass failed; will
// retry" with "Stream isn't writeable and enableOfflineQueue options is false"). The queue Redis is a
// private one reached over a link that takes a second to open (a remote Redis, a TLS handshake), so a
// relay that does not wait for its connection meets it before it is up, every time.
const LINK_SETUP_MS = 1000;
const workerFile = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../workers/webhook-worker.js');
const db = await isolatedDatabase();
const qredis = new PrivateRedis();
await qredis.start();
// Each connection is passed on to the queue Redis only once the link is "up".
const link = net.createServer((client) => {
  client.pause();
  setTimeout(() => {
    const upstream = net.connect(qredis.port, '127.0.0.1', () => { client.pipe(upstream); upstream.pipe(client); client.resume(); });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    client.on('close', () => upstream.destroy());
  }, LINK_SETUP_MS);
});
await new Promise<void>((resolve) => link.listen(0, '127.0.0.1', resolve));
const slowQueueUrl = `redis://127.0.0.1:${(link.address() as net.AddressInfo).port}`;
const config = testConfig({ WEBHOOK_ALLOW_PRIVATE: 'true', DATABASE_URL: db.url, QUEUE_REDIS_URL: slowQueueUrl });
const sql = testSql(config);
const tenant = await createTenant(sql, 'whstart');
let child: ChildProcess | undefined;
t.teardown(async () => {
  child?.kill('SIGKILL');
  await sql.end({ timeout: 2 });
  await new Promise<void>((resolve) => link.close(() => resolve()));
  await qredis.destroy();
  await db.drop();
});

t.test('a fresh webhook worker starts without a warning and delivers', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  await addWebhook(sql, config, tenant, { url: rx.url, events: ['user.created'] });
  const env = { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'debug', WEBHOOK_ALLOW_PRIVATE: 'true', REDIS_PREFIX: config.redisPrefix, QUEUE_REDIS_URL: config.queueRedisUrl, DATABASE_URL: config.databaseUrl, REDIS_URL: config.redisUrl };
  const lines: string[] = [];
  child = fork(workerFile, [], { env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  let buf = '';
  const collect = (chunk: Buffer) => {
    buf += chunk.toString('utf8');
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) { lines.push(buf.slice(0, nl)); buf = buf.slice(nl + 1); }
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  await new Promise<void>((resolve, reject) => {
    child!.once('message', (m: { type?: string }) => (m?.type === 'svc:ready' ? resolve() : reject(new Error('unexpected message'))));
    child!.once('exit', (code) => reject(new Error(`worker exited early (${code})`)));
  });
  // An event committed after the start goes out: the relay's passes work.
  await emit(sql, { tenantId: tenant, event: 'user.created', data: { user_id: 'fresh-start' } });
  await waitFor(() => rx.received.length === 1, 20_000);
  t.equal(JSON.parse(rx.received[0]!.body).data.user_id, 'fresh-start');
  const warnings = lines.filter((l) => { try { return (JSON.parse(l) as { level: number }).level >= 40; } catch { return l.trim() !== ''; } });
  t.same(warnings, [], 'no warning, error or stray output in the worker log');
});
