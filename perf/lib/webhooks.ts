// `npm run perf -- webhooks` (issue 35 item 2): the whole delivery path, outbox → relay → BullMQ →
// signed POST to a loopback receiver → attempt recorded, driven through one webhook-worker process
// (`node dist/workers/webhook-worker.js`, the process the supervisor runs for role webhook-worker).
// 1. capacity: a backlog of events committed at once, drained; deliveries/s over the middle 80% of
//    the receipts, with the worker's CPU;
// 2. latency: events committed one per transaction at a fixed rate (half the capacity unless --wh-rate),
//    event-to-receipt = commit of the event's transaction to the receiver reading the request;
// 3. the ledger: every event must arrive (lost = 0) and, in a run without crashes, exactly once
//    (duplicated = 0); every delivery must end `success` with one attempt recorded.
// A database of its own (created, migrated and dropped here) so no other relay sees its outbox, and a
// Redis prefix of its own for the queue.
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import { loadConfig } from '../../src/config.js';
import { recordEvents } from '../../src/events/outbox.js';
import { configureFieldSealing } from '../../src/sealed-fields.js';
import { createSql, type Sql } from '../../src/sql.js';
import { newId } from '../../src/store/ids.js';
import { WebhookRepository } from '../../src/store/webhooks.js';
import { sealWebhookSecret } from '../../src/webhooks/secret-box.js';
import { cmdline, descendants, pidsListeningOn, ProcSampler, type ProcFigures } from './procstat.js';
import { num, percentiles, ROOT, say, sleep, stamp, str, type Opts, type Pcts } from './util.js';

export interface WebhookRun {
  database: string;
  concurrency: number | 'default';
  capacity: { events: number; seconds: number; deliveriesPerSec: number; steadyPerSec: number; recordedAllSec: number; workerCpuPct: number; workerCpuUsPerDelivery: number; procs: ProcFigures[] };
  latency: { rate: number; seconds: number; events: number; achievedPerSec: number; ms: Pcts; workerCpuPct: number; workerCpuUsPerDelivery: number; procs: ProcFigures[] };
  ledger: { events: number; received: number; lost: number; duplicated: number; badSignature: number; badBody: number; deliveries: Record<string, number>; attempts: Record<string, number>; deliveriesWithoutOneAttempt: number };
  notes: string[];
}

const CLI = path.join(ROOT, 'dist', 'src', 'cli.js');
const WORKER = path.join(ROOT, 'dist', 'workers', 'webhook-worker.js');
const RECEIVER = path.join(ROOT, 'dist', 'perf', 'webhook-receiver.js');
const SECRET = 'whsec_perf_0123456789abcdefghijklmnopqrstuvwxyz';
const PREFIX = 'perf-';

const now = () => performance.timeOrigin + performance.now();

/** Asks the receiver child one question and waits for its answer. */
function ask<T>(rx: ChildProcess, msg: Record<string, unknown>): Promise<T> {
  return new Promise((resolve) => {
    const on = (m: { type: string }) => { if (m.type === msg.type) { rx.off('message', on); resolve(m as T); } };
    rx.on('message', on);
    rx.send(msg);
  });
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`webhooks: ${what} not reached in ${timeoutMs / 1000} s`);
    await sleep(20);
  }
}

export async function runWebhooks(opts: Opts): Promise<WebhookRun> {
  const baseUrl = process.env.DATABASE_URL;
  if (!baseUrl) throw new Error('webhooks: DATABASE_URL is not set (npm run perf sets it)');
  const dbName = `svc_perf_wh_${stamp().replace(/[^0-9]/g, '')}_${process.pid}`;
  const u = new URL(baseUrl);
  const admin = new URL(baseUrl); admin.pathname = '/postgres';
  u.pathname = `/${dbName}`;
  const dbUrl = u.toString();
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: dbUrl, REDIS_PREFIX: `perfwh${process.pid}${Date.now()}:`, WEBHOOK_ALLOW_PRIVATE: 'true', LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn', SVC_ROLE: 'webhook-worker' };
  const concurrency = str(opts, 'wh-concurrency');
  if (concurrency) env.WEBHOOK_CONCURRENCY = concurrency;
  const events = num(opts, 'wh-events', 20_000);
  const latencySeconds = num(opts, 'wh-seconds', 10);
  const notes: string[] = [];

  const adminSql = postgres(admin.toString(), { max: 1, onnotice: () => {} });
  await adminSql.unsafe(`create database "${dbName}"`);
  const children: ChildProcess[] = [];
  let sql: Sql | undefined;
  try {
    const mig = spawnSync(process.execPath, [CLI, 'migrate'], { cwd: ROOT, env, encoding: 'utf8' });
    if (mig.status !== 0) throw new Error(`webhooks: migrate failed: ${(mig.stderr || mig.stdout).slice(-500)}`);
    const config = loadConfig(env);
    configureFieldSealing(config.keyEncryptionKey);
    sql = createSql(config, { max: 16 });
    const db = sql;

    // Fixtures: a tenant and one webhook subscribed to user.created, at the receiver.
    const capacityN = events + Math.ceil(latencySeconds * 20_000) + 1_000;
    const rx = fork(RECEIVER, [], { env: { ...process.env, WH_SECRET: SECRET, WH_PREFIX: PREFIX, WH_CAPACITY: String(capacityN) }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    children.push(rx);
    const port = await new Promise<number>((resolve, reject) => {
      rx.once('message', (m: { port: number }) => resolve(m.port));
      rx.once('exit', (c) => reject(new Error(`receiver exited (${c})`)));
    });
    const tenant = `perfwh-${Date.now()}`;
    await db`insert into tenants (id, name) values (${tenant}, ${tenant})`;
    const hookId = newId('wh');
    await new WebhookRepository(db, tenant).insert(hookId, { name: 'perf receiver', url: `http://127.0.0.1:${port}/hook`, events: ['user.created'] },
      sealWebhookSecret(config.keyEncryptionKey, tenant, hookId, SECRET));

    // The worker: one process, as the supervisor starts it (PERF_NODE_ARGS adds node flags, e.g. --cpu-prof).
    const execArgv = process.env.PERF_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
    const worker = fork(WORKER, [], { env, execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    children.push(worker);
    await new Promise<void>((resolve, reject) => {
      worker.once('message', (m: { type?: string }) => (m?.type === 'svc:ready' ? resolve() : reject(new Error('unexpected message'))));
      worker.once('exit', (c) => reject(new Error(`webhook worker exited early (${c})`)));
    });
    say(`webhooks: worker pid ${worker.pid} (WEBHOOK_CONCURRENCY=${concurrency ?? 'default'}), receiver pid ${rx.pid} on 127.0.0.1:${port}, database ${dbName}`);

    const commitAt = new Float64Array(capacityN);
    let seq = 0;
    const emit = async (n: number): Promise<void> => {
      const first = seq;
      seq += n;
      const batch = Array.from({ length: n }, (_, i) => ({ tenantId: tenant, event: 'user.created' as const, data: { user_id: `${PREFIX}${first + i}` } }));
      await db.begin((tx) => recordEvents(tx, batch));
      const t = now();
      for (let i = first; i < first + n; i++) commitAt[i] = t;
    };
    const received = async () => (await ask<{ total: number }>(rx, { type: 'count' })).total;
    const pending = async () => Number((await db<{ n: string }[]>`select count(*)::text as n from webhook_deliveries where tenant_id = ${tenant} and status = 'pending'`)[0]!.n);
    const undispatched = async () => Number((await db<{ n: string }[]>`select count(*)::text as n from event_outbox where tenant_id = ${tenant} and dispatched_at is null`)[0]!.n);
    const settled = async (n: number) => (await received()) >= n && (await pending()) === 0 && (await undispatched()) === 0;
    const pids = (): number[] => {
      const out = worker.pid ? [worker.pid] : [];
      // This run's Postgres backends only (their title names the database), Redis, the receiver.
      for (const p of pidsListeningOn(Number(new URL(baseUrl).port) || 5432)) for (const d of descendants(p)) if (cmdline(d).includes(dbName)) out.push(d);
      for (const p of pidsListeningOn(Number(new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379').port) || 6379)) out.push(p);
      if (rx.pid) out.push(rx.pid);
      out.push(process.pid);
      return out;
    };
    const workerPct = (f: ProcFigures[]) => f.find((p) => p.pid === worker.pid)?.cpuPct ?? NaN;
    const group = (f: ProcFigures[]): ProcFigures[] => {
      // Postgres backends summed into one line.
      const pg = f.filter((p) => /postgres/.test(p.label));
      const rest = f.filter((p) => !/postgres/.test(p.label)).map((p) => ({ ...p, label: p.pid === worker.pid ? 'webhook-worker' : p.pid === rx.pid ? 'receiver' : p.pid === process.pid ? 'harness (producer)' : p.label }));
      return pg.length ? [...rest, { pid: 0, label: `postgres backends of ${dbName} (${pg.length})`, cpuPct: Math.round(pg.reduce((a, p) => a + p.cpuPct, 0) * 10) / 10, rssMbMax: 0, rssMbMean: 0 }] : rest;
    };

    // Warm-up: connections, JIT, the sentinel's first pass.
    await emit(500);
    await until(() => settled(500), 60_000, 'warm-up delivered');

    // 1. Capacity: a backlog of `events`, drained.
    say(`webhooks: capacity — ${events} events committed in transactions of 500, drained by one worker`);
    const capFrom = seq;
    const sampler = new ProcSampler(pids, 500).start();
    const c0 = now();
    for (let i = 0; i < events; i += 500) await emit(Math.min(500, events - i));
    await until(async () => (await received()) >= capFrom + events, 600_000, 'capacity backlog received');
    const capProcs = sampler.stop();
    await until(() => settled(capFrom + events), 120_000, 'capacity backlog recorded');
    const recordedAll = (now() - c0) / 1000;
    const capRep = await ask<{ firstAt: number[] }>(rx, { type: 'report', from: capFrom, to: capFrom + events });
    const arrivals = capRep.firstAt.filter((x) => x > 0).sort((a, b) => a - b);
    const last = arrivals.at(-1)!;
    const secs = (last - c0) / 1000;
    const q = (p: number) => arrivals[Math.floor(p * (arrivals.length - 1))]!;
    const steady = Math.round((0.8 * arrivals.length) / ((q(0.9) - q(0.1)) / 1000));
    const capPct = workerPct(capProcs);
    const capacity = {
      events, seconds: Math.round(secs * 100) / 100, deliveriesPerSec: Math.round(events / secs), steadyPerSec: steady, recordedAllSec: Math.round(recordedAll * 100) / 100,
      workerCpuPct: capPct, workerCpuUsPerDelivery: Math.round(((capPct / 100) * secs * 1e6) / events), procs: group(capProcs),
    };
    say(`webhooks: capacity ${capacity.steadyPerSec} deliveries/s steady (${capacity.deliveriesPerSec}/s first commit to last receipt, ${capacity.seconds} s; all recorded after ${capacity.recordedAllSec} s); worker CPU ${capPct}% = ${capacity.workerCpuUsPerDelivery} µs/delivery`);

    // 2. Latency at a fixed rate: one event per transaction, evenly spaced.
    const rate = num(opts, 'wh-rate', Math.max(1, Math.round(steady / 2)));
    say(`webhooks: latency — ${rate} events/s for ${latencySeconds} s, one event per transaction`);
    const latFrom = seq;
    const total = Math.round(rate * latencySeconds);
    const sampler2 = new ProcSampler(pids, 500).start();
    const l0 = now();
    const inflight = new Set<Promise<void>>();
    let sent = 0;
    while (sent < total) {
      const due = Math.min(total, Math.floor(((now() - l0) / 1000) * rate) + 1);
      while (sent < due) {
        const p = emit(1).finally(() => inflight.delete(p));
        inflight.add(p);
        sent++;
      }
      await sleep(2);
    }
    await Promise.all(inflight);
    const producedSecs = (now() - l0) / 1000;
    await until(async () => (await received()) >= latFrom + total, 120_000, 'latency events received');
    const latProcs = sampler2.stop();
    const latRep = await ask<{ firstAt: number[] }>(rx, { type: 'report', from: latFrom, to: latFrom + total });
    const lat: number[] = [];
    for (let i = 0; i < total; i++) if (latRep.firstAt[i]! > 0) lat.push(latRep.firstAt[i]! - commitAt[latFrom + i]!);
    const latPct = workerPct(latProcs);
    const latency = {
      rate, seconds: latencySeconds, events: total, achievedPerSec: Math.round(total / producedSecs), ms: percentiles(lat),
      workerCpuPct: latPct, workerCpuUsPerDelivery: Math.round(((latPct / 100) * producedSecs * 1e6) / total), procs: group(latProcs),
    };
    say(`webhooks: event-to-receipt at ${rate}/s: p50 ${latency.ms.p50} ms, p95 ${latency.ms.p95} ms, p99 ${latency.ms.p99} ms; worker CPU ${latPct}%`);

    // 3. The ledger over every event of the run.
    await until(() => settled(seq), 120_000, 'every delivery recorded');
    const all = await ask<{ total: number; badSignature: number; badBody: number; counts: number[] }>(rx, { type: 'report', from: 0, to: seq });
    let lost = 0, duplicated = 0, got = 0;
    for (const c of all.counts) { if (c === 0) lost++; else got++; if (c > 1) duplicated++; }
    const byStatus = async (table: 'webhook_deliveries' | 'webhook_delivery_attempts') => Object.fromEntries(
      (await db.unsafe<Array<{ status: string; n: string }>>(`select status, count(*)::text as n from ${table} where tenant_id = $1 group by status`, [tenant])).map((r) => [r.status, Number(r.n)]));
    const [odd] = await db<{ n: string }[]>`select count(*)::text as n from webhook_deliveries d where d.tenant_id = ${tenant}
      and (select count(*) from webhook_delivery_attempts a where a.tenant_id = d.tenant_id and a.delivery_id = d.id) <> 1`;
    const ledger = { events: seq, received: got, lost, duplicated, badSignature: all.badSignature, badBody: all.badBody,
      deliveries: await byStatus('webhook_deliveries'), attempts: await byStatus('webhook_delivery_attempts'), deliveriesWithoutOneAttempt: Number(odd!.n) };
    say(`webhooks: ledger — ${seq} events, ${got} received, lost ${lost}, duplicated ${duplicated}, bad signatures ${all.badSignature}; deliveries ${JSON.stringify(ledger.deliveries)}, attempts ${JSON.stringify(ledger.attempts)}`);

    // Stop the worker cleanly (a --cpu-prof profile is written at exit).
    await new Promise<void>((resolve) => { worker.once('exit', () => resolve()); worker.send({ type: 'svc:shutdown' }); });
    rx.send({ type: 'stop' });
    return { database: dbName, concurrency: concurrency ? Number(concurrency) : 'default', capacity, latency, ledger, notes };
  } finally {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await sql?.end({ timeout: 2 });
    if (opts['wh-keep-db'] !== true) await adminSql.unsafe(`drop database if exists "${dbName}" with (force)`).catch(() => {});
    await adminSql.end({ timeout: 2 });
  }
}

/** The targets for the report's PASS/FAIL lines. */
export function webhookTargets(w: WebhookRun): Array<{ target: string; measured: string; limit: string; pass: boolean | undefined }> {
  return [
    { target: 'webhook deliveries per webhook-worker process (receiver on loopback)', measured: `${w.capacity.steadyPerSec}/s (worker CPU ${w.capacity.workerCpuPct}%)`, limit: '≥ 2,000/s', pass: w.capacity.steadyPerSec >= 2000 },
    { target: `webhook event-to-receipt p95 at ${w.latency.rate}/s`, measured: `${w.latency.ms.p95} ms (p50 ${w.latency.ms.p50})`, limit: '≤ 50 ms at half the target rate or more', pass: w.latency.rate >= 1000 ? w.latency.ms.p95 <= 50 : undefined },
    { target: 'webhook deliveries lost / duplicated (clean run)', measured: `${w.ledger.lost} / ${w.ledger.duplicated} of ${w.ledger.events}`, limit: '0 / 0', pass: w.ledger.lost === 0 && w.ledger.duplicated === 0 && w.ledger.badSignature === 0 },
  ];
}
