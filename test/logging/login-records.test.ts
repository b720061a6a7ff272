import t from 'tap';
import { createLogger } from '../../src/log.js';
import { closeLogin } from '../../src/login/index.js';
import { startSmtpSink } from '../../src/mail/dev-sink.js';
import { startEmailWorker } from '../../workers/email-worker.js';
import { startWebhookWorker } from '../../workers/webhook-worker.js';
import { adminToken } from '../helpers/tokens.js';
import { api } from '../admin/helpers.js';
import { waitFor } from '../helpers/processes.js';
import { setupTenant } from '../helpers/tokens.js';
import { codeFor, uniqueEmail } from '../login/fixtures.js';
import { logEnv, sinkReceiver } from './fixtures.js';

// Sign-ins (a wrong code, then the right one) and the webhook deliveries they trigger end up as auth
// and webhook_delivery records in committed, decryptable chunks.
const smtp = await startSmtpSink();
const env = await logEnv({ SMTP_URL: `smtp://127.0.0.1:${smtp.port}` });
const { srv, sql } = env;
const mailer = await startEmailWorker(srv.config, createLogger('silent'));
const hooks = await startWebhookWorker(srv.config, createLogger('silent'));
const receiver = await sinkReceiver();
const worker = await env.worker();
t.teardown(async () => { await worker.close(); await hooks.close(); await mailer.close(); await closeLogin(srv.deps); await receiver.close(); await smtp.close(); });
const tenant = await setupTenant(srv, 'logins');
const call = api(srv, await adminToken(srv, { tenantId: tenant.tenant_id, permissions: ['admin:*'] }));
const JSON_HEADERS = { 'content-type': 'application/json' };

t.test('auth events and webhook attempts are archived', async (t) => {
  const hook = await call('POST', '/api/admin/webhooks', { name: 'logins', url: `${receiver.url.replace('/ingest', '')}/hook`, events: ['auth.login', 'auth.login_failed'] });
  t.equal(hook.status, 201, JSON.stringify(hook.body));
  const email = uniqueEmail('logrec');
  const web = tenant.clients.web;
  let res = await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ email, client_id: web.client_id }) });
  t.equal(res.status, 200);
  const code = await codeFor(smtp, email);
  const wrong = code === '000000' ? '111111' : '000000';
  res = await fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ email, code: wrong }) });
  t.not(res.status, 200);
  res = await fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ email, code }) });
  t.equal(res.status, 200);

  const records = async (type: string) => {
    const out: any[] = [];
    for (const c of await sql<any[]>`select id from log_chunks where tenant_id = ${tenant.tenant_id} and log_type = ${type} and status = 'committed'`) {
      const r = await fetch(`${srv.url}/api/admin/admin-logging/chunks/${c.id}/download`, { headers: { authorization: `Bearer ${await adminToken(srv, { tenantId: tenant.tenant_id, permissions: ['admin:*'] })}` } });
      out.push(...(await r.text()).trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)));
    }
    return out;
  };
  let auth: any[] = [];
  await waitFor(async () => {
    auth = await records('auth');
    return auth.some((r) => r.body.event === 'auth.login') && auth.some((r) => r.body.event === 'auth.login_failed');
  }, 30_000, 200);
  t.ok(auth.every((r) => r.lane === 'default' && r.plane === 'data'));
  t.notMatch(JSON.stringify(auth), code, 'no one-time code in the records');
  let deliveries: any[] = [];
  await waitFor(async () => {
    deliveries = await records('webhook_delivery');
    return deliveries.length >= 2;
  }, 30_000, 200);
  t.ok(deliveries.every((r) => r.body.webhook_id === hook.body.id && typeof r.body.success === 'boolean' && r.lane === 'default' && r.plane === 'control'));
  t.same(deliveries.map((r) => r.body.event).sort(), ['auth.login', 'auth.login_failed']);
});
