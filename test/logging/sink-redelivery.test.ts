import t from 'tap';
import { adminOf } from '../admin/helpers.js';
import { waitFor } from '../helpers/processes.js';
import { logEnv, sinkReceiver } from './fixtures.js';

// A minute and a half to two on a slow day of this host (2 cores shared with the suite's other files): above tap's default 120 s per file.
t.setTimeout(300_000);

// Issue 29 item 11: an http_sink that refuses chunks at first is sent them again, with a growing wait
// between attempts, across a crash of the log worker, until it has every one; the backlog shows on the
// destination meanwhile and is zero after. A rewrap sends the sink the re-encrypted copy naming the
// object it supersedes. Real log worker processes, everything through the admin API.
type Subtest = Parameters<Parameters<typeof t.test>[0]>[0];
const RETRY_MS = 300;
const env = await logEnv({ LOG_DELIVERY_INTERVAL_MS: '200', LOG_DELIVERY_RETRY_MS: String(RETRY_MS), LOG_DELIVERY_RETRY_MAX_MS: '2000' });
const { srv, sql } = env;
const A = await adminOf(srv, ['admin:*'], 'logsink');
const sink = await sinkReceiver();
t.teardown(sink.close);
sink.status.code = 503;

const committed = () => sql<any[]>`select * from log_chunks where tenant_id = ${A.tenantId} and status = 'committed' order by created_at, id`;
const traffic = async (t: Subtest, n: number) => {
  for (let i = 0; i < n; i++) t.equal((await A.call('PUT', '/api/admin/logging-policies/settings', { token_decision_logging: i % 2 === 0 })).status, 200);
};
const accepted = (key: string) => sink.received.filter((r) => r.key === key && r.answered === 200);

let dest: any;

t.test('a failing sink is retried with backoff, across a worker crash, until it has every chunk', async (t) => {
  const res = await A.call('POST', '/api/admin/destinations', { name: 'sink', kind: 'http_sink', url: sink.url });
  t.equal(res.status, 201);
  dest = res.body.destination;
  sink.secrets.set(1, res.body.secret);
  t.match(dest.backlog, { pending: 0 }, 'nothing owed yet');
  let worker = await env.child();
  await traffic(t, 3);

  // The sink answers 503: the first chunk's object is tried again and again.
  let first: any;
  await waitFor(async () => {
    first ??= (await committed())[0];
    return first !== undefined && sink.received.filter((r) => r.key === first.object_key).length >= 3;
  }, 30_000, 50);
  const tries = sink.received.filter((r) => r.key === first.object_key);
  t.ok(tries.every((r) => r.answered === 503 && r.verified.includes(1)), 'signed, refused');
  t.same(tries.slice(0, 3).map((r) => r.headers['x-svc-delivery-attempt']), ['1', '2', '3'], 'attempts are counted');
  // Backoff: at least 80% of RETRY_MS doubled per failure between attempts (the jitter takes up to 20% off).
  t.ok(tries[1]!.at - tries[0]!.at >= RETRY_MS * 0.8, `second attempt ${tries[1]!.at - tries[0]!.at} ms after the first`);
  t.ok(tries[2]!.at - tries[1]!.at >= RETRY_MS * 2 * 0.8, `third attempt ${tries[2]!.at - tries[1]!.at} ms after the second`);

  const got = (await A.call('GET', `/api/admin/destinations/${dest.id}`)).body;
  const owed = (await committed()).length;
  t.ok(got.backlog.pending >= 1 && got.backlog.pending <= owed, `backlog ${got.backlog.pending} of ${owed} chunks`);
  t.match(got.backlog, { last_status: 503, last_error: /503/, oldest_pending_at: Number, next_attempt_at: Number });
  t.ok(got.backlog.attempts >= 3);
  const listed = (await A.call('GET', '/api/admin/admin-logging/chunks?limit=100')).body.items.find((c: any) => c.id === first.id);
  t.match(listed.deliveries, [{ destination_id: dest.id, ok: false, status: 503, next_attempt_at: Number }]);
  t.ok((await A.call('GET', '/api/admin/destinations')).body.items[0].backlog.pending >= 1, 'the list shows it too');

  // The worker dies with deliveries owed; the sink recovers; a new worker sends everything.
  await env.kill(worker);
  await traffic(t, 2);
  sink.status.code = 200;
  worker = await env.child();
  await waitFor(async () => {
    const cs = await committed();
    const d = (await A.call('GET', `/api/admin/destinations/${dest.id}`)).body;
    return cs.length > owed && d.backlog.pending === 0 && cs.every((c) => accepted(c.object_key).length > 0);
  }, 60_000, 100);
  const after = (await A.call('GET', `/api/admin/destinations/${dest.id}`)).body;
  t.match(after.backlog, { pending: 0, oldest_pending_at: null, next_attempt_at: null, last_error: null, last_status: 200 }, 'backlog zero');
  for (const c of await committed()) {
    const body = accepted(c.object_key)[0]!.body;
    t.equal((await env.decrypt(A.tenantId, body)).sha256, c.sha256, `the sink has ${c.object_key}`);
  }
  const items = (await A.call('GET', '/api/admin/admin-logging/chunks?limit=100')).body.items;
  t.ok(items.filter((c: any) => c.status === 'committed').every((c: any) => c.deliveries.some((d: any) => d.destination_id === dest.id && d.ok && d.delivered_at > 0)), 'the catalog shows every chunk delivered');
});

t.test('after a rewrap the sink is sent the re-encrypted copy, naming the object it supersedes', async (t) => {
  const reg = (await A.call('GET', '/api/admin/admin-logging/key-registries')).body.items.find((r: any) => r.log_type === 'admin_audit' && r.plane === 'control');
  t.equal((await A.call('POST', `/api/admin/admin-logging/key-registries/${reg.id}/versions/1/compromise`)).status, 200);
  const res = await A.call('POST', '/api/admin/admin-logging/rewrap-jobs', { key_registry_id: reg.id });
  t.equal(res.status, 200);
  t.ok(res.body.result.queued > 0);
  await waitFor(async () => (await A.call('GET', `/api/admin/admin-logging/rewrap-jobs/${res.body.job_id}`)).body.jobs.every((j: any) => j.status === 'succeeded'), 60_000, 100);
  const jobs = (await A.call('GET', `/api/admin/admin-logging/rewrap-jobs/${res.body.job_id}`)).body.jobs;
  const rewrapped = (await committed()).filter((c) => jobs.some((j: any) => j.chunk_id === c.id));
  t.ok(rewrapped.length > 0 && rewrapped.every((c) => c.key_version === 2));
  await waitFor(() => rewrapped.every((c) => accepted(c.object_key).length > 0), 30_000, 100);
  for (const c of rewrapped) {
    const copy = accepted(c.object_key)[0]!;
    const old = c.object_key.replace('.v2.', '.v1.');
    t.equal(copy.headers['x-svc-supersedes-object-key'], old, `${c.object_key} supersedes ${old}`);
    t.equal(copy.headers['x-svc-supersedes-key-version'], '1');
    t.equal(copy.headers['x-svc-key-version'], '2');
    t.ok(accepted(old).length > 0, 'the sink had the old one');
    const opened = await env.decrypt(A.tenantId, copy.body);
    t.equal(opened.header.key_version, 2, 'sealed under the new version');
    t.equal(opened.sha256, c.sha256, 'same records');
  }
  await waitFor(async () => (await A.call('GET', `/api/admin/destinations/${dest.id}`)).body.backlog.pending === 0, 30_000, 100);
  const v = (await A.call('GET', `/api/admin/admin-logging/key-registries/${reg.id}`)).body.versions;
  t.match(v[0], { version: 1, status: 'retired', chunk_count: 0 }, 'the compromised version is retired');
});
