import t from 'tap';
import { scrape, value } from '../helpers/metrics.js';
import { codeFor, startLoginEnv, uniqueEmail } from '../login/fixtures.js';

// Login traffic and refusals as an operator reads them on /metrics: a code login, a rate-limited code
// request (429) and requests shed by the in-flight budget (503), each counted once under its reason.
const env = await startLoginEnv({ LOGIN_IP_LIMIT_PER_MINUTE: '2', MAX_INFLIGHT: '1' });
t.teardown(() => env.close());
const { srv, sink, tenant } = env;
const json = { 'content-type': 'application/json' };

t.test('a login by code, then a third code request from the same address refused as rate_limit', async (t) => {
  const before = await scrape(srv.url);
  const email = uniqueEmail('metrics');
  let res = await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: json, body: JSON.stringify({ email, client_id: tenant.clients.web.client_id }) });
  t.equal(res.status, 200);
  const code = await codeFor(sink, email);
  res = await fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: json, body: JSON.stringify({ email, code }) });
  t.equal(res.status, 200);
  res = await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: json, body: JSON.stringify({ email, client_id: tenant.clients.web.client_id }) });
  t.equal(res.status, 200);
  res = await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: json, body: JSON.stringify({ email, client_id: tenant.clients.web.client_id }) });
  t.equal(res.status, 429, 'past LOGIN_IP_LIMIT_PER_MINUTE');
  const after = await scrape(srv.url);
  const d = (name: string, labels: Record<string, string> = {}) => value(after, name, labels) - value(before, name, labels);
  t.equal(d('svc_http_requests_total', { route: '/email-code/generate', status: '200' }), 2);
  t.equal(d('svc_http_requests_total', { route: '/email-code/verify', status: '200' }), 1, 'one login');
  t.equal(d('svc_http_requests_total', { route: '/email-code/generate', status: '429' }), 1);
  t.equal(d('svc_admission_refusals_total', { reason: 'rate_limit' }), 1, 'the 429 is a rate_limit refusal');
  t.equal(d('svc_http_requests_by_tenant_class_total', { status_class: '4xx' }), 1);
  // The email worker runs in this process: its queue is reported, and nothing is left waiting once the codes were mailed.
  t.equal(value(after, 'svc_queue_jobs', { queue: 'email', state: 'waiting' }), 0);
  t.ok(after.some((s) => s.name === 'svc_queue_oldest_job_age_seconds' && s.labels.queue === 'email'), 'the email queue has its age gauge');
});

t.test('requests past the in-flight budget are shed and counted as inflight refusals', async (t) => {
  const before = await scrape(srv.url);
  // /readyz holds its slot across Postgres and Redis round trips: with MAX_INFLIGHT=1, concurrent ones are shed.
  const statuses = await Promise.all(Array.from({ length: 20 }, () => fetch(`${srv.url}/readyz`).then((r) => r.status)));
  const shed = statuses.filter((s) => s === 503).length;
  t.ok(shed >= 1, `${shed} of 20 shed`);
  const after = await scrape(srv.url);
  const d = (name: string, labels: Record<string, string> = {}) => value(after, name, labels) - value(before, name, labels);
  t.equal(d('svc_admission_refusals_total', { reason: 'inflight' }), shed, 'each 503 counted once, under inflight');
  t.equal(d('svc_http_shed_total'), shed);
  t.equal(d('svc_http_requests_total', { route: '/readyz', status: '503' }), shed);
  t.equal(d('svc_http_requests_by_tenant_class_total', { tenant_class: 'unknown', status_class: '5xx' }), shed);
});
