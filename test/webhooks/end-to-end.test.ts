import { createHmac } from 'node:crypto';
import t from 'tap';
import { createLogger } from '../../src/log.js';
import { startWebhookWorker } from '../../workers/webhook-worker.js';
import { j } from '../helpers/http.js';
import { waitFor } from '../helpers/processes.js';
import { startTestServer } from '../helpers/server.js';
import { adminToken } from '../helpers/tokens.js';
import { isolatedDatabase, startReceiver } from './fixtures.js';
import { uniqueName } from '../helpers/env.js';

// Across features: an administrator's change reaches a webhook receiver through the outbox, the relay
// and the delivery worker, with nothing but HTTP on both ends.
t.test('admin creates and suspends a user; the receiver gets user.created and user.suspended, signed', async (t) => {
  const db = await isolatedDatabase();
  const srv = await startTestServer({ DATABASE_URL: db.url, WEBHOOK_ALLOW_PRIVATE: 'true' });
  const worker = await startWebhookWorker(srv.config, createLogger('silent'), { relay: { pollMs: 100 } });
  const rx = await startReceiver();
  t.teardown(async () => { await rx.close(); await worker.close(); await srv.close(); await db.drop(); });

  const tenant = uniqueName('e2e');
  const token = await adminToken(srv, { tenantId: tenant, permissions: ['admin:*'] });
  const admin = (method: string, path: string, body?: unknown) => fetch(`${srv.url}${path}`, {
    method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body),
  });

  let res = await admin('POST', '/api/admin/webhooks', { name: 'users', url: `${rx.url}/hook`, events: ['user.created', 'user.suspended'] });
  t.equal(res.status, 201);
  const hook = await j(res);
  t.type(hook.secret, 'string', 'the generated secret is shown once, at creation');

  res = await admin('POST', '/api/admin/users', { email: 'e2e@example.test' });
  t.equal(res.status, 201);
  const user = await j(res);
  res = await admin('POST', `/api/admin/users/${user.id}/suspend`);
  t.equal(res.status, 200);

  await waitFor(() => rx.received.length >= 2, 20_000, 100);
  const events = rx.received.map((r) => JSON.parse(r.body));
  t.same(events.map((e) => e.event).sort(), ['user.created', 'user.suspended']);
  for (const e of events) t.equal(e.data.user_id, user.id, `${e.event} names the user`);
  for (const r of rx.received) {
    const expected = createHmac('sha256', hook.secret).update(`${r.headers['x-svc-timestamp']}.${r.body}`).digest('hex');
    t.equal(r.headers['x-svc-signature'], `sha256=${expected}`, 'signature verifies with the secret from creation');
  }
  // The receiver sees a request before the worker records its outcome: wait for the recorded state.
  const succeeded = async () => (await j(await admin('GET', `/api/admin/webhooks/${hook.id}/deliveries`))).items.filter((d: { status: string }) => d.status === 'success').length;
  await waitFor(async () => (await succeeded()) >= 2, 20_000, 100).catch(() => {});
  t.equal(await succeeded(), 2, 'both deliveries recorded as successful');
});
