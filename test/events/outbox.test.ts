import t from 'tap';
import { recordEvent } from '../../src/events/outbox.js';
import { EVENT_NAMES } from '../../src/events/names.js';
import { OutboxRelay } from '../../src/events/relay.js';
import { createLogger } from '../../src/log.js';
import { JobQueues } from '../../src/jobs/queues.js';
import { deliveryJobId } from '../../src/webhooks/queue.js';
import { testConfig } from '../helpers/env.js';
import { addWebhook, createTenant, isolatedDatabase, testSql } from '../webhooks/fixtures.js';

// The outbox and the relay without a consumer: what is written, when, and that repeating a relay step
// after a crash neither loses nor duplicates anything.
const db = await isolatedDatabase();
const config = testConfig({ DATABASE_URL: db.url });
const sql = testSql(config);
const tenant = await createTenant(sql, 'outbox');
const jobQueues = new JobQueues(config);
const queue = await jobQueues.queue('webhooks');
await queue.waitUntilReady();
t.teardown(async () => { await queue.obliterate({ force: true }).catch(() => {}); await jobQueues.close(); await sql.end({ timeout: 2 }); await db.drop(); });

t.test('the sixteen event names of the spec', async (t) => {
  t.equal(EVENT_NAMES.length, 16);
  t.equal(new Set(EVENT_NAMES).size, 16);
});

t.test('an event exists only if its transaction commits', async (t) => {
  await sql.begin((tx) => recordEvent(tx, { tenantId: tenant, event: 'user.created', data: { user_id: 'kept' } }));
  await t.rejects(sql.begin(async (tx) => {
    await recordEvent(tx, { tenantId: tenant, event: 'user.created', data: { user_id: 'rolled-back' } });
    throw new Error('the change failed');
  }));
  const rows = await sql<{ data: { user_id: string } }[]>`select data from event_outbox where tenant_id = ${tenant}`;
  t.same(rows.map((r) => r.data.user_id), ['kept']);
});

t.test('programming mistakes are TypeErrors', async (t) => {
  await t.rejects(sql.begin((tx) => recordEvent(tx, { tenantId: tenant, event: 'user.exploded' as never, data: {} })), TypeError);
  await t.rejects(sql.begin((tx) => recordEvent(tx, { tenantId: '', event: 'user.created', data: {} })), TypeError);
  await t.rejects(sql.begin((tx) => recordEvent(tx, { tenantId: tenant, event: 'user.created', data: [] as never })), TypeError);
});

t.test('relay: fan-out once, enqueue idempotently, re-enqueue after a crash between add and mark', async (t) => {
  await addWebhook(sql, config, tenant, { url: 'http://127.0.0.1:9/', events: ['user.created'] });
  await addWebhook(sql, config, tenant, { url: 'http://127.0.0.1:9/', events: ['user.created'] });
  const relay = new OutboxRelay(sql, jobQueues, config.redisPrefix, createLogger('silent'));
  await relay.pass();
  await relay.pass();
  const deliveries = await sql<{ id: string; queued_at: unknown }[]>`select id, queued_at from webhook_deliveries where tenant_id = ${tenant}`;
  t.equal(deliveries.length, 2, 'one delivery per matching webhook, however many passes');
  t.ok(deliveries.every((d) => d.queued_at), 'all marked queued');
  t.equal((await sql`select 1 from event_outbox where tenant_id = ${tenant} and dispatched_at is null`).length, 0, 'outbox rows marked dispatched');
  const queued = await queue.getJobs(['waiting', 'delayed', 'prioritized']);
  const jobs = async () => (await queue.getJobs(['waiting', 'delayed', 'prioritized'])).map((j) => j.id).sort();
  const before = await jobs();
  // Due attempts of one tenant go in one job (issue 35), each named once.
  t.equal(queued.length, 1, 'one job for the tenant\'s two due attempts');
  const first = [...deliveries].sort((a, b) => (a.id < b.id ? -1 : 1))[0]!;
  t.equal(queued[0]!.id, `${deliveryJobId(first.id, 1)}.batch`, 'named after its first attempt, so the same batch added again is the same job');
  t.same(queued[0]!.data, { tenantId: tenant, items: [...deliveries].sort((a, b) => (a.id < b.id ? -1 : 1)).map((d) => ({ deliveryId: d.id, attempt: 1 })) });
  // A crash after the add but before the mark looks like this: the jobs exist, the rows say unqueued.
  await sql`update webhook_deliveries set queued_at = null where tenant_id = ${tenant}`;
  await relay.pass();
  t.same(await jobs(), before, 'adding again is a no-op: no duplicate jobs');
  t.equal((await sql`select 1 from webhook_deliveries where tenant_id = ${tenant} and queued_at is null`).length, 0);
});

t.test('relay: a fan-out whose relay died before adding its jobs (claim never confirmed) is released and enqueued by a later pass', async (t) => {
  const other = await createTenant(sql, 'outbox-claim');
  await addWebhook(sql, config, other, { url: 'http://127.0.0.1:9/', events: ['user.created'] });
  await sql.begin((tx) => recordEvent(tx, { tenantId: other, event: 'user.created', data: { user_id: 'claimed' } }));
  const relay = new OutboxRelay(sql, jobQueues, config.redisPrefix, createLogger('silent'), { claimGraceMs: 5_000 });
  await relay.pass();
  const [d] = await sql<{ id: string; queued_at: string }[]>`select id, queued_at::text from webhook_deliveries where tenant_id = ${other}`;
  t.ok(Number(d!.queued_at) > 0, 'fanned out, added and the claim confirmed in one pass');
  t.ok(await queue.getJob(deliveryJobId(d!.id, 1)), 'its job is in the queue');
  // What a relay dying between its fan-out's commit and its add leaves: the claim (negative), no job.
  await queue.remove(deliveryJobId(d!.id, 1));
  await sql`update webhook_deliveries set queued_at = ${-(Date.now() - 1_000)} where tenant_id = ${other}`;
  await new OutboxRelay(sql, jobQueues, config.redisPrefix, createLogger('silent'), { claimGraceMs: 5_000 }).pass();
  t.notOk(await queue.getJob(deliveryJobId(d!.id, 1)), 'a claim younger than claimGraceMs is left to its relay');
  await sql`update webhook_deliveries set queued_at = ${-(Date.now() - 6_000)} where tenant_id = ${other}`;
  await new OutboxRelay(sql, jobQueues, config.redisPrefix, createLogger('silent'), { claimGraceMs: 5_000 }).pass();
  t.ok(await queue.getJob(deliveryJobId(d!.id, 1)), 'an older one is released and its job added');
  const [after] = await sql<{ queued_at: string }[]>`select queued_at::text from webhook_deliveries where tenant_id = ${other}`;
  t.ok(Number(after!.queued_at) > 0, 'and marked queued');
});
