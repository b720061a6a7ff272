// Webhook delivery throughput and event-to-receipt latency (not a tap test; run by hand):
//   node ops/build-schemas.mjs && npx tsc -p tsconfig.json
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/svc_test REDIS_URL=redis://127.0.0.1:6379 node dist/test/webhooks/throughput.bench.js [events] [concurrency]
// One process holds the relay, the BullMQ consumer and a node:http receiver on loopback; Postgres and
// Redis are the local servers. Throughput: N events committed in one transaction to one webhook, clock
// from commit to the last receipt. Latency: 200 single events, each committed after the previous arrived.
import { performance } from 'node:perf_hooks';
import { recordEvent } from '../../src/events/outbox.js';
import { createLogger } from '../../src/log.js';
import { startWebhookWorker } from '../../workers/webhook-worker.js';
import { testConfig } from '../helpers/env.js';
import { waitFor } from '../helpers/processes.js';
import { addWebhook, createTenant, isolatedDatabase, startReceiver, testSql } from './fixtures.js';

const n = Number(process.argv[2] ?? 5000);
const concurrency = process.argv[3] ?? '32';
const db = await isolatedDatabase();
const config = testConfig({ DATABASE_URL: db.url, WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_CONCURRENCY: concurrency, DATABASE_POOL_SIZE: '20' });
const sql = testSql(config);
const tenant = await createTenant(sql, 'bench');
const arrivals: number[] = [];
const rx = await startReceiver((r) => { arrivals.push(performance.now()); void r; });
await addWebhook(sql, config, tenant, { url: rx.url, events: ['auth.login'], retry_policy: { max_retries: 0, retry_interval: 1 } });
const worker = await startWebhookWorker(config, createLogger('silent'), { relay: { pollMs: 1000 } });

// Warm-up: connections, JIT.
await sql.begin(async (tx) => { for (let i = 0; i < 200; i++) await recordEvent(tx, { tenantId: tenant, event: 'auth.login', data: { user_id: `w${i}` } }); });
await waitFor(() => rx.received.length === 200, 60_000);
rx.received.length = 0; arrivals.length = 0;

// Latency.
const lat: number[] = [];
for (let i = 0; i < 200; i++) {
  const before = rx.received.length;
  const t0 = performance.now();
  await sql.begin((tx) => recordEvent(tx, { tenantId: tenant, event: 'auth.login', data: { user_id: `l${i}` } }));
  await waitFor(() => rx.received.length > before, 10_000, 1);
  lat.push(arrivals[arrivals.length - 1]! - t0);
}
lat.sort((a, b) => a - b);
const pct = (p: number) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))]!.toFixed(1);

// Throughput.
rx.received.length = 0; arrivals.length = 0;
await sql.begin(async (tx) => { for (let i = 0; i < n; i++) await recordEvent(tx, { tenantId: tenant, event: 'auth.login', data: { user_id: `t${i}` } }); });
const c0 = performance.now();
await waitFor(() => rx.received.length >= n, 600_000, 5);
const secs = (arrivals[n - 1]! - c0) / 1000;
await waitFor(async () => (await sql`select 1 from webhook_deliveries where status = 'pending' limit 1`).length === 0, 60_000);
const recorded = (performance.now() - c0) / 1000;

console.log(JSON.stringify({
  events: n, concurrency: Number(concurrency),
  throughput_deliveries_per_s: Math.round(n / secs), received_all_s: +secs.toFixed(2), recorded_all_s: +recorded.toFixed(2),
  latency_ms: { p50: pct(50), p95: pct(95), p99: pct(99), max: lat[lat.length - 1]!.toFixed(1) },
}));
await worker.close(); await rx.close(); await sql.end({ timeout: 2 }); await db.drop();
process.exit(0);
