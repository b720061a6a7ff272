import t from 'tap';
import { createLogger } from '../../src/log.js';
import { closeLogin } from '../../src/login/index.js';
import { startSmtpSink, type SmtpSink } from '../../src/mail/dev-sink.js';
import { startJobsWorker } from '../../workers/jobs-worker.js';
import { api } from '../admin/helpers.js';
import { freePort } from '../helpers/env.js';
import { waitFor } from '../helpers/processes.js';
import { startTestServer } from '../helpers/server.js';
import { adminToken, setupTenant } from '../helpers/tokens.js';

const INTERVAL = 500;
const smtpPort = await freePort();
let sink: SmtpSink | null = await startSmtpSink({ port: smtpPort });
const srv = await startTestServer({ SMTP_URL: `smtp://127.0.0.1:${smtpPort}`, PLUGIN_HEALTH_INTERVAL_MS: String(INTERVAL) });
const tenant = await setupTenant(srv, 'plugins');
const call = api(srv, await adminToken(srv, { tenantId: tenant.tenant_id, permissions: ['admin:*'] }));
t.teardown(async () => { await srv.close(); await closeLogin(srv.deps); await sink?.close(); });

const health = async (id: string) => (await call('GET', `/api/admin/plugins/${id}/health`)).body.health;

t.test('unknown before any check; unknown plugin is 404 not_found', async (t) => {
  const r = await call('GET', '/api/admin/plugins/smtp-mailer/health');
  t.equal(r.status, 200);
  t.match(r.body, { pluginId: 'smtp-mailer', health: { status: 'unknown', message: 'no recent health check' } });
  t.type(r.body.health.timestamp, 'number');
  const nope = await call('GET', '/api/admin/plugins/nope/health');
  t.same([nope.status, nope.body.error], [404, 'not_found']);
});

t.test('the repeatable job checks the mailer: healthy, unhealthy within one interval of the SMTP server stopping, healthy again', async (t) => {
  const worker = await startJobsWorker(srv.config, createLogger('silent'));
  t.teardown(() => worker.close());
  await waitFor(async () => (await health('smtp-mailer')).status === 'healthy', 10_000);
  const h = await health('smtp-mailer');
  t.match(h, { status: 'healthy', message: 'SMTP server accepted the connection and EHLO' });
  t.ok(Date.now() - h.timestamp < 5_000, 'a recent timestamp');
  for (const id of ['webhook-sender', 'csv-importer', 'stdout-log']) t.equal((await health(id)).status, 'healthy', id);
  t.match(await health('key-encryption'), { status: 'degraded', message: 'the development key is in use' }, 'the tests run on the development key');

  await sink!.close();
  sink = null;
  const stopped = Date.now();
  await waitFor(async () => (await health('smtp-mailer')).status === 'unhealthy', 10_000);
  const took = Date.now() - stopped;
  t.ok(took <= INTERVAL + 1_500, `unhealthy after ${took} ms (interval ${INTERVAL} ms, plus the check and polling)`);
  t.match(await health('smtp-mailer'), { status: 'unhealthy', message: /^SMTP connection failed \(E[A-Z]+\)$/ });
  t.notMatch(JSON.stringify(await health('smtp-mailer')), /127\.0\.0\.1|smtp:\/\//, 'no address in the message');

  sink = await startSmtpSink({ port: smtpPort });
  await waitFor(async () => (await health('smtp-mailer')).status === 'healthy', 10_000);
  t.pass('healthy again');
});

t.test('settings: secrets sealed and masked, unknown settings refused, all audited', async (t) => {
  const list = await call('GET', '/api/admin/plugins');
  t.same(list.body.items.map((p: any) => p.id), ['smtp-mailer', 'webhook-sender', 'csv-importer', 'key-encryption', 'stdout-log']);
  t.match(list.body.items[0], { enabled: true, config: {}, updated_at: null, capabilities: ['email.send', 'login.code'] });
  const put = await call('PUT', '/api/admin/plugins/smtp-mailer/config', { config: { from_name: 'Acme', relay_password: 'Hunter2-Sekret-Value' } });
  t.equal(put.status, 200);
  t.same(put.body.config, { from_name: 'Acme', relay_password: '********' });
  t.notMatch(JSON.stringify(put.body), /Hunter2/);
  const row = (await srv.deps.sql`select config, secrets_enc from plugin_configs where tenant_id = ${tenant.tenant_id} and plugin_id = 'smtp-mailer'`)[0]!;
  t.same(row.config, { from_name: 'Acme' });
  t.notOk(Buffer.from(row.secrets_enc).toString('latin1').includes('Hunter2'), 'the secret is stored sealed');
  const keep = await call('PUT', '/api/admin/plugins/smtp-mailer/config', { config: { from_name: 'Acme 2' } });
  t.same(keep.body.config, { from_name: 'Acme 2', relay_password: '********' }, 'a secret not given is kept');
  const clear = await call('PUT', '/api/admin/plugins/smtp-mailer/config', { config: { relay_password: null } });
  t.same(clear.body.config, {}, 'null removes');
  const bad = await call('PUT', '/api/admin/plugins/smtp-mailer/config', { config: { colour: 'red' } });
  t.same([bad.status, bad.body.details], [422, { 'config.colour': ['is not a setting of this plugin'] }]);
  const audit = await call('GET', '/api/admin/admin-audit-log?resource_type=plugin&limit=10');
  t.notMatch(JSON.stringify(audit.body), /Hunter2/, 'the audit log never holds the secret');
  t.ok(audit.body.items.some((e: any) => e.action === 'plugin.configure' && e.result === 'success'));
});

t.test('disabling the mailer makes email sign-in answer a clear 503 at once', async (t) => {
  const web = tenant.clients.web;
  const gen = () => fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'someone@example.test', client_id: web.client_id }) });
  t.equal((await gen()).status, 200);
  const off = await call('POST', '/api/admin/plugins/smtp-mailer/disable');
  t.match([off.status, off.body.enabled], [200, false]);
  const started = Date.now();
  const res = await gen();
  t.equal(res.status, 503);
  t.ok(Date.now() - started < 2_000, 'answered at once');
  const body = await res.json() as any;
  t.equal(body.error, 'service_unavailable');
  t.match(body.error_description, /mailer is disabled/);
  t.equal((await call('POST', '/api/admin/plugins/smtp-mailer/enable')).body.enabled, true);
  t.equal((await gen()).status, 200);
});
