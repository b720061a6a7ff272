import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { recordEvent } from '../../src/events/outbox.js';
import { newId } from '../../src/store/ids.js';
import { Store } from '../../src/store/index.js';
import { migrate } from '../../src/store/migrate.js';
import { CrossTenantDeliveries } from '../../src/cross-tenant/webhook-deliveries.js';
import type { WebhookRepository } from '../../src/store/webhooks.js';
import { planDeliveries } from '../../src/webhooks/fan-out.js';
import { sealWebhookSecret, webhookSecret } from '../../src/webhooks/secret-box.js';
import { tempDatabase } from '../helpers/db.js';
import { uniqueName } from '../helpers/env.js';
import { PiiVault } from '../../src/pii/vault.js';
import { loadConfig } from '../../src/config.js';

// In the manner of Hydra's persister_nid_test: what tenant A's webhook repository creates, tenant B's
// cannot read, list, change, delete or retry, and A's data is the same afterwards. A database of its
// own, because the fan-out below serves every tenant of its database.
const db = await tempDatabase();
t.teardown(db.drop);
await migrate(db.sql);
const sql = db.sql;
const store = new Store(sql, PiiVault.fromConfig(loadConfig(), sql));
const kek = randomBytes(32);
const [a, b] = [uniqueName('wh-a'), uniqueName('wh-b')];
for (const id of [a, b]) await sql`insert into tenants (id, name) values (${id}, ${id})`;
const A = store.forTenant(a).webhooks;
const B = store.forTenant(b).webhooks;

async function addHook(repo: WebhookRepository, tenantId: string, id: string, name: string) {
  return repo.insert(id, { name, url: 'https://example.com/hook', events: ['user.created'], retry_policy: { max_retries: 0 } }, sealWebhookSecret(kek, tenantId, id, `secret-of-${name}-0123456789`));
}

/** Everything A holds, to compare before and after B's attempts. */
async function snapshotOfA(hookId: string, deliveryId: string) {
  return {
    hook: await A.get(hookId), list: await A.list({ limit: 10 }), count: await A.count(),
    deliveries: await A.deliveries(hookId, { limit: 10 }), delivery: await A.delivery(hookId, deliveryId),
    keys: await sql`select tenant_id, webhook_id, key, result from webhook_test_idempotency where tenant_id = ${a} order by key`,
  };
}

const hook = await addHook(A, a, newId('wh'), 'a-hook');
await sql.begin((tx) => recordEvent(tx, { tenantId: a, event: 'user.created', data: { user_id: 'u-a' } }));
await new CrossTenantDeliveries(sql).fanOut(100, Date.now(), planDeliveries);
const [delivery] = await A.deliveries(hook.id, { limit: 10 });
await store.transaction(a, (s) => s.webhooks.recordAttempt(delivery!.id, 1, {
  ok: false, responseStatus: 503, responseTimeMs: 5, error: 'HTTP 503', startedAt: Date.now(), completedAt: Date.now(), nextAttemptAt: null,
}));
assert.equal((await A.delivery(hook.id, delivery!.id))?.delivery.status, 'failed', 'A has a failed delivery with one attempt');
assert.equal((await A.claimTestKey(hook.id, 'k-held', Date.now())).claimed, true);
assert.equal((await A.claimTestKey(hook.id, 'k-done', Date.now())).claimed, true);
await A.storeTestResult(hook.id, 'k-done', { success: true });
const before = await snapshotOfA(hook.id, delivery!.id);

t.test('B cannot read or list A\'s webhooks, deliveries or attempts', async (t) => {
  t.equal(await B.get(hook.id), null);
  t.equal(await B.get(hook.id, { lock: true }), null);
  t.same(await B.list({ limit: 10 }), []);
  t.equal(await B.count(), 0);
  t.equal(await B.count({ status: 'active' }), 0);
  t.same(await B.deliveries(hook.id, { limit: 10 }), []);
  t.equal(await B.countDeliveries(hook.id, {}), 0);
  t.equal(await B.delivery(hook.id, delivery!.id), null);
  t.equal(await B.loadDelivery(delivery!.id), null);
});

t.test('B cannot update, delete or retry A\'s, nor record, abandon or queue its attempts', async (t) => {
  t.equal(await B.update(hook.id, { name: 'taken', status: 'inactive', secretEnc: sealWebhookSecret(kek, b, hook.id, 'b-secret-0123456789') }), null);
  t.equal(await B.delete(hook.id), false);
  t.equal(await B.retryDelivery(hook.id, delivery!.id, Date.now()), 'not_found');
  const recorded = await store.transaction(b, (s) => s.webhooks.recordAttempt(delivery!.id, 1, {
    ok: true, responseStatus: 200, responseTimeMs: 1, error: null, startedAt: Date.now(), completedAt: Date.now(), nextAttemptAt: null,
  }));
  t.equal(recorded, false);
  await B.abandonDelivery(delivery!.id, 1, 'by b', Date.now());
  await B.markQueued(delivery!.id, 1, Date.now());
});

t.test('B cannot claim, fill or release A\'s test Idempotency-Keys', async (t) => {
  await t.rejects(B.claimTestKey(hook.id, 'k-new', Date.now()), 'a key needs a webhook of the tenant');
  await B.storeTestResult(hook.id, 'k-held', { success: false });
  await B.releaseTestKey(hook.id, 'k-held');
  t.same(await A.claimTestKey(hook.id, 'k-held', Date.now()), { claimed: false, result: null }, 'A\'s key is still held');
  t.same(await A.claimTestKey(hook.id, 'k-done', Date.now()), { claimed: false, result: { success: true } });
});

t.test('the same webhook id in B is B\'s own; changing and deleting it leaves A\'s alone', async (t) => {
  const mine = await addHook(B, b, hook.id, 'b-hook');
  t.equal(mine.id, hook.id);
  t.equal((await B.get(hook.id))?.name, 'b-hook');
  t.same((await B.list({ limit: 10 })).map((w) => w.name), ['b-hook']);
  t.equal(webhookSecret((await B.get(hook.id))!, kek), 'secret-of-b-hook-0123456789');
  t.same(await B.deliveries(hook.id, { limit: 10 }), [], 'A\'s deliveries are not B\'s though the webhook ids match');
  t.equal(await B.delivery(hook.id, delivery!.id), null);
  t.equal(await B.retryDelivery(hook.id, delivery!.id, Date.now()), 'not_found');
  t.equal((await B.update(hook.id, { name: 'b-hook 2' }))?.name, 'b-hook 2');
  t.equal(await B.claimTestKey(hook.id, 'k-held', Date.now()).then((c) => c.claimed), true, 'B\'s keys are its own');
  await B.storeTestResult(hook.id, 'k-held', { from: 'b' });
  t.equal(await B.delete(hook.id), true);
  t.equal(await B.get(hook.id), null);
});

t.test('A\'s data is unchanged afterwards', async (t) => {
  const after = await snapshotOfA(hook.id, delivery!.id);
  t.same(after, before);
  t.equal(after.hook?.name, 'a-hook');
  t.equal(after.delivery?.delivery.status, 'failed');
  t.equal(after.delivery?.attempts.length, 1);
  t.equal(webhookSecret(after.hook!, kek), 'secret-of-a-hook-0123456789');
  t.equal(await A.retryDelivery(hook.id, delivery!.id, Date.now()).then((r) => typeof r === 'object' && r.status), 'pending', 'and still A\'s to retry');
});
