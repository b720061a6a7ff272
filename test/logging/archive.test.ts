import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { bootstrap } from '../../src/bootstrap.js';
import { openChunk, openVersionKey } from '../../src/logging/chunk-crypto.js';
import { adminOf, api } from '../admin/helpers.js';
import { j } from '../helpers/http.js';
import { waitFor } from '../helpers/processes.js';
import { adminToken, postForm, setupTenant } from '../helpers/tokens.js';
import { logEnv, sinkReceiver } from './fixtures.js';

// Real traffic (admin mutations, token issuance/introspection/revocation with token logging on) through
// the per-process buffer and the log worker into committed, encrypted chunks on a filesystem destination
// and an http_sink whose receiver verifies the HMAC; then key rotation and rewrap; destination
// credential rotation with its overlap; the tenant rule and bad bodies.
const env = await logEnv();
const { srv, sql } = env;
const sink = await sinkReceiver();
t.teardown(sink.close);
const A = await adminOf(srv, ['admin:*'], 'logs-a');
const bTenant = await setupTenant(srv, 'logs-b');
const B = { tenantId: bTenant.tenant_id, call: api(srv, await adminToken(srv, { tenantId: bTenant.tenant_id, permissions: ['admin:*'] })) };
const P = await adminOf(srv, ['admin:*'], 'logs-p', true);
// adminOf does not return the bootstrap clients: a second bootstrap of the same tenant is idempotent and answers them.
const aBoot = await bootstrap(srv.config, sql, A.tenantId, { onClientChanged: (id) => srv.deps.tokens.clients.changed(id) });
let worker = await env.worker();

const committed = async (tenantId: string) => (await sql<any[]>`select * from log_chunks where tenant_id = ${tenantId} and status = 'committed' order by created_at, id`);
const download = async (call: typeof A.call, id: string, headers: Record<string, string> = {}) => {
  const res = await fetch(`${srv.url}/api/admin/admin-logging/chunks/${id}/download`, { headers: { authorization: `Bearer ${call === A.call ? A.token : P.token}`, ...headers } });
  return { status: res.status, text: await res.text(), sha: res.headers.get('x-chunk-sha256') };
};
const lines = (text: string) => text.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));

let fsDest: any;
let sinkDest: any;

t.test('admin mutations and token decisions end up in committed, decryptable chunks on both destinations', async (t) => {
  let res = await A.call('POST', '/api/admin/destinations', { name: 'disk', kind: 'filesystem', directory: 'tenant-a/disk' });
  t.equal(res.status, 201, JSON.stringify(res.body));
  fsDest = res.body.destination;
  t.match(fsDest, { kind: 'filesystem', scope: 'tenant', directory: 'tenant-a/disk', health: 'unknown', rotation_state: 'idle', credential_versions: [] });
  res = await A.call('POST', '/api/admin/destinations', { name: 'sink', kind: 'http_sink', url: sink.url });
  t.equal(res.status, 201, JSON.stringify(res.body));
  sinkDest = res.body.destination;
  t.type(res.body.secret, 'string', 'the generated credential is shown once');
  sink.secrets.set(1, res.body.secret);
  t.match(sinkDest.credential_versions, [{ version: 1, status: 'current', backend: 'encrypted_table' }]);
  t.notMatch(JSON.stringify((await A.call('GET', `/api/admin/destinations/${sinkDest.id}`)).body), res.body.secret, 'never returned again');

  t.same((await A.call('GET', '/api/admin/logging-policies/settings')).body, { tenant_id: A.tenantId, token_decision_logging: false });
  res = await A.call('PUT', '/api/admin/logging-policies/settings', { token_decision_logging: true });
  t.same(res.body, { tenant_id: A.tenantId, token_decision_logging: true });
  const [audit] = await sql<any[]>`select * from admin_audit_log where tenant_id = ${A.tenantId} and action = 'logging_settings.update'`;
  t.match(audit, { before: { token_decision_logging: false }, after: { token_decision_logging: true } }, 'the decision is audited');

  // Token traffic of tenant A's bootstrap clients.
  const a = { exchanger: aBoot.clients.exchanger, rs: aBoot.clients.resource_server };
  const issued = await j(await postForm(`${srv.url}/token`, a.exchanger, { grant_type: 'client_credentials' }));
  t.type(issued.access_token, 'string');
  const refused = await postForm(`${srv.url}/token`, a.exchanger, { grant_type: 'client_credentials', scope: 'not-a-scope' });
  t.equal(refused.status, 400);
  const intro = await j(await postForm(`${srv.url}/introspect`, a.rs, { token: issued.access_token }));
  t.equal(intro.active, true);
  t.equal((await postForm(`${srv.url}/revoke`, a.exchanger, { token: issued.access_token })).status, 200);
  // Tenant B has token logging off: its decisions are not recorded.
  const bTok = await j(await postForm(`${srv.url}/token`, bTenant.clients.exchanger, { grant_type: 'client_credentials' }));
  await postForm(`${srv.url}/introspect`, bTenant.clients.resource_server, { token: bTok.access_token });

  await waitFor(async () => {
    const cs = await committed(A.tenantId);
    return cs.some((c) => c.log_type === 'token') && cs.some((c) => c.log_type === 'admin_audit')
      && Number((await sql`select count(*)::int as n from log_records where tenant_id = ${A.tenantId}`)[0]!.n) === 0;
  }, 20_000, 100);
  const chunks = await committed(A.tenantId);
  const list = (await A.call('GET', '/api/admin/admin-logging/chunks?limit=100')).body;
  t.equal(list.items.length, chunks.length, 'the catalog lists every chunk');
  t.ok(list.items.every((c: any) => c.status === 'committed' && c.key_version === 1 && /^[0-9a-f]{64}$/.test(c.sha256) && c.destination_id === fsDest.id));

  const all: any[] = [];
  for (const c of chunks) {
    const d = await download(A.call, c.id);
    t.equal(d.status, 200);
    t.equal(d.sha, c.sha256);
    const recs = lines(d.text);
    t.equal(recs.length, c.record_count);
    all.push(...recs);
    // The object on the filesystem destination decrypts with the registry's key and matches the catalog.
    const onDisk = fs.readFileSync(path.join(env.ENV.LOG_ARCHIVE_DIR, 'tenant-a/disk', c.object_key));
    const opened = await env.decrypt(A.tenantId, onDisk);
    t.equal(opened.sha256, c.sha256);
  }
  const actions = all.filter((r) => r.log_type === 'admin_audit').map((r) => r.body.action);
  t.ok(actions.includes('log_destination.create') && actions.includes('logging_settings.update'), `admin audit records: ${actions.join(', ')}`);
  t.ok(all.filter((r) => r.log_type === 'admin_audit').every((r) => r.lane === 'critical' && r.plane === 'control'));
  const tokens = all.filter((r) => r.log_type === 'token');
  t.ok(tokens.every((r) => r.lane === 'bulk' && r.plane === 'data'));
  t.match(tokens.map((r) => r.body).sort((x, y) => String(x.decision + x.issued).localeCompare(String(y.decision + y.issued))), [
    { decision: 'introspect', active: true }, { decision: 'issue', issued: false, error: 'invalid_scope' }, { decision: 'issue', issued: true, grant_type: 'client_credentials' },
    { decision: 'revoke', token_kind: 'access_token' },
  ]);
  t.notMatch(JSON.stringify(all), issued.access_token, 'no token value in the records');
  t.ok(all.every((r) => r.tenant_id === A.tenantId));
  const audits = await sql<any[]>`select * from admin_audit_log where tenant_id = ${A.tenantId} and action = 'log_chunk.download'`;
  t.equal(audits.length, chunks.length, 'every download is audited');

  // The http_sink received every chunk, signed with the current credential, byte-identical to the catalog object.
  await waitFor(() => chunks.every((c) => sink.received.some((r) => r.key === c.object_key)));
  for (const c of chunks) {
    const got = sink.received.find((r) => r.key === c.object_key);
    t.ok(got, `sink received ${c.object_key}`);
    t.same(got!.verified, [1], 'HMAC verified with credential v1');
    t.equal((await env.decrypt(A.tenantId, got!.body)).sha256, c.sha256);
  }
  // The catalog shows where each chunk went: the filesystem destination and the sink.
  await waitFor(async () => {
    const items = (await A.call('GET', '/api/admin/admin-logging/chunks?limit=100')).body.items.filter((i: any) => chunks.some((c) => c.id === i.id));
    return items.every((i: any) => i.deliveries.some((d: any) => d.destination_id === sinkDest.id && d.ok));
  }, 10_000, 100);
  const listed = (await A.call('GET', '/api/admin/admin-logging/chunks?limit=100')).body.items.find((i: any) => i.id === chunks[0].id);
  t.match(listed, { location: 'tenant-a/disk', deliveries: [{ destination_id: fsDest.id, ok: true }, { destination_id: sinkDest.id, ok: true, attempts: 1 }] });
  // B: no token records at all.
  await waitFor(async () => Number((await sql`select count(*)::int as n from log_records where tenant_id = ${B.tenantId}`)[0]!.n) === 0, 20_000, 100);
  t.equal((await committed(B.tenantId)).filter((c) => c.log_type === 'token').length, 0, 'token logging is off for B');

  // Health: the periodic check marks both destinations healthy.
  await waitFor(async () => {
    const l = (await A.call('GET', '/api/admin/destinations')).body.items;
    return l.length === 2 && l.every((d: any) => d.health === 'healthy');
  }, 10_000, 100);
});

t.test('key rotation and rewrap: every chunk decryptable under the new version, none under the old', async (t) => {
  // No worker while the jobs are created, so the duplicate answer is deterministic (downloads above were audited: wait for their chunks first).
  await waitFor(async () => Number((await sql`select count(*)::int as n from log_records where tenant_id = ${A.tenantId}`)[0]!.n) === 0, 20_000, 100);
  await worker.close();
  const regs = (await A.call('GET', '/api/admin/admin-logging/key-registries')).body.items;
  const reg = regs.find((r: any) => r.log_type === 'admin_audit' && r.plane === 'control');
  t.match(reg, { active_version: 1, versions: [{ version: 1, status: 'active' }] });
  const n = reg.versions[0].chunk_count;
  t.ok(n > 1);
  let res = await A.call('POST', `/api/admin/admin-logging/key-registries/${reg.id}/rotate`);
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.match(res.body, { active_version: 2, versions: [{ version: 1, status: 'rewrap_required', chunk_count: n }, { version: 2, status: 'active', chunk_count: 0 }] });
  t.notMatch(JSON.stringify(res.body), /key_enc|key_material/);

  for (const bad of [{}, { key_registry_id: reg.id, limit: 0 }, { key_registry_id: reg.id, limit: 101 }, { key_registry_id: reg.id, from_version: 0 }, { key_registry_id: reg.id, extra: 1 }]) {
    const r = await A.call('POST', '/api/admin/admin-logging/rewrap-jobs', bad);
    t.equal(r.status, 422, JSON.stringify(bad));
    t.equal(r.body.error, 'validation_error');
  }
  t.equal((await A.call('POST', '/api/admin/admin-logging/rewrap-jobs', { key_registry_id: 'lkr_nope' })).status, 404);
  t.equal((await B.call('POST', '/api/admin/admin-logging/rewrap-jobs', { key_registry_id: reg.id })).status, 404, 'another tenant\'s registry is not found');

  res = await A.call('POST', '/api/admin/admin-logging/rewrap-jobs', { key_registry_id: reg.id, from_version: 1, limit: 1 });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.match(res.body, { result: { queued: 1, skipped_duplicates: 0, candidates_left: n - 1 }, audit_id: /^aud_/, job_id: /^lrwb_/ });
  const [entry] = await sql<any[]>`select * from admin_audit_log where tenant_id = ${A.tenantId} and id = ${res.body.audit_id}`;
  t.match(entry, { action: 'log_rewrap.create', resource_id: res.body.job_id });
  const second = await A.call('POST', '/api/admin/admin-logging/rewrap-jobs', { key_registry_id: reg.id });
  t.match(second.body.result, { queued: n - 1, skipped_duplicates: 1, candidates_left: 0 }, 'the open job is a duplicate');
  const third = await P.call('POST', '/api/admin/admin-logging/rewrap-jobs', { key_registry_id: reg.id });
  t.match(third.body.result, { queued: 0, skipped_duplicates: n, candidates_left: 0, tenant_id: A.tenantId }, 'a platform admin may name any tenant\'s registry');

  worker = await env.worker();
  await waitFor(async () => {
    const b1 = (await A.call('GET', `/api/admin/admin-logging/rewrap-jobs/${res.body.job_id}`)).body;
    const b2 = (await A.call('GET', `/api/admin/admin-logging/rewrap-jobs/${second.body.job_id}`)).body;
    return [...b1.jobs, ...b2.jobs].every((j: any) => j.status === 'succeeded');
  }, 30_000, 100);
  const after = (await A.call('GET', `/api/admin/admin-logging/key-registries/${reg.id}`)).body;
  t.match(after.versions, [{ version: 1, status: 'retired', chunk_count: 0 }, { version: 2, status: 'active' }]);
  t.ok(after.versions[1].chunk_count >= n, 'the rewrapped chunks and the new ones');
  const chunks = (await committed(A.tenantId)).filter((c) => c.key_registry_id === reg.id);
  const [v1] = await sql<Array<{ key_enc: Buffer }>>`select key_enc from log_key_versions where tenant_id = ${A.tenantId} and registry_id = ${reg.id} and version = 1`;
  const oldKey = openVersionKey(srv.config.keyEncryptionKey, A.tenantId, reg.id, 1, v1!.key_enc);
  for (const c of chunks) {
    t.equal(c.key_version, 2);
    const d = await download(A.call, c.id);
    t.equal(d.status, 200);
    t.equal(d.sha, c.sha256, 'same plaintext');
    const obj = fs.readFileSync(path.join(env.ENV.LOG_ARCHIVE_DIR, 'tenant-a/disk', c.object_key));
    t.equal((await env.decrypt(A.tenantId, obj)).sha256, c.sha256);
    t.throws(() => openChunk(obj, () => oldKey), 'not decryptable under the old version');
    t.notOk(fs.existsSync(path.join(env.ENV.LOG_ARCHIVE_DIR, 'tenant-a/disk', c.object_key.replace('.v2.', '.v1.'))), 'old object deleted');
  }

  // Compromise the active version: rotated first, then its chunks are candidates ahead of stale ones.
  res = await A.call('POST', `/api/admin/admin-logging/key-registries/${reg.id}/versions/2/compromise`);
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.match(res.body, { active_version: 3, versions: [{ version: 1, status: 'retired' }, { version: 2, status: 'compromised' }, { version: 3, status: 'active' }] });
  t.equal((await A.call('POST', `/api/admin/admin-logging/key-registries/${reg.id}/versions/1/compromise`)).status, 409);
  t.equal((await A.call('POST', `/api/admin/admin-logging/key-registries/${reg.id}/versions/9/compromise`)).status, 404);
  const onV2 = res.body.versions[1].chunk_count;
  res = await A.call('POST', '/api/admin/admin-logging/rewrap-jobs', { key_registry_id: reg.id });
  t.ok(res.body.result.queued >= onV2 && onV2 > n - 1, `queued ${res.body.result.queued} of ${onV2}`);
  await waitFor(async () => (await A.call('GET', `/api/admin/admin-logging/key-registries/${reg.id}`)).body.versions[1].status === 'retired', 30_000, 100);
  t.ok((await committed(A.tenantId)).filter((c) => c.key_registry_id === reg.id).every((c) => c.key_version === 3));
});

t.test('destination credential: prepare -> activate -> overlap -> retired', async (t) => {
  const url = `/api/admin/destinations/${sinkDest.id}/credentials`;
  for (const [body, fields] of [[{}, ['secret_value', 'credential_value', 'plaintext']], [{ secret_value: 'a', plaintext: 'b' }, ['secret_value', 'credential_value', 'plaintext']],
    [{ secret_value: 'x', backend: 's3' }, ['backend']], [{ secret_value: 'x', other: 1 }, []]] as const) {
    const r = await A.call('POST', `${url}/prepare`, body);
    t.equal(r.status, 422, JSON.stringify(body));
    t.equal(r.body.error, 'validation_error');
    for (const f of fields) t.ok(JSON.stringify(r.body).includes(f), `names ${f}`);
  }
  t.equal((await A.call('POST', `${url}/activate`)).status, 409, 'nothing prepared');
  const secret2 = 'second-credential-0123456789';
  let res = await A.call('POST', `${url}/prepare`, { secret_value: secret2, content_type: 'text/plain' });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.match(res.body.result, { destination_id: sinkDest.id, rotation_state: 'prepared', current_version: 1, next_version: 2, credential_versions: [{ version: 1, status: 'current' }, { version: 2, status: 'next', backend: 'encrypted_object_store', content_type: 'text/plain' }] });
  t.notMatch(JSON.stringify(res.body), secret2, 'the secret is never answered');
  const sealedFile = path.join(env.ENV.LOG_SECRETS_DIR, A.tenantId, sinkDest.id, 'v2.sealed');
  t.ok(fs.existsSync(sealedFile), 'stored as a sealed file');
  t.notOk(fs.readFileSync(sealedFile).includes(Buffer.from(secret2)), 'sealed, not plaintext');
  // Prepared, not active: chunks are still signed with v1 only.
  res = await A.call('POST', `${url}/abort`);
  t.match(res.body.result, { rotation_state: 'idle', next_version: null, credential_versions: [{ version: 1, status: 'current' }, { version: 2, status: 'aborted' }] });
  res = await A.call('POST', `${url}/prepare`, { credential_value: secret2, backend: 'encrypted_table' });
  t.match(res.body.result, { rotation_state: 'prepared', next_version: 3 });
  sink.secrets.set(3, secret2);
  res = await A.call('POST', `${url}/activate`);
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.match(res.body.result, { rotation_state: 'overlap', current_version: 3, previous_version: 1 });
  const prev = res.body.result.credential_versions.find((c: any) => c.version === 1);
  t.ok(prev.retire_after > Date.now(), 'the previous credential has an overlap');
  // A chunk sent during the overlap carries both signatures, current first.
  const before = sink.received.length;
  t.equal((await A.call('PATCH', `/api/admin/destinations/${fsDest.id}`, { name: 'disk 2' })).status, 200);
  await waitFor(() => sink.received.length > before, 20_000, 100);
  t.same(sink.received.at(-1)!.versions, [3, 1]);
  t.same(sink.received.at(-1)!.verified, [3, 1]);
  // The overlap ends (LOG_CREDENTIAL_OVERLAP_MS=2000 here, 24 h by default): the previous one is retired.
  await waitFor(async () => {
    const d = (await A.call('GET', `/api/admin/destinations/${sinkDest.id}`)).body;
    return d.rotation_state === 'idle' && d.credential_versions.find((c: any) => c.version === 1).status === 'retired';
  }, 10_000, 100);
  const n = sink.received.length;
  t.equal((await A.call('PATCH', `/api/admin/destinations/${fsDest.id}`, { name: 'disk 3' })).status, 200);
  await waitFor(() => sink.received.length > n, 20_000, 100);
  t.same(sink.received.at(-1)!.versions, [3], 'after the overlap only the current credential signs');
  const actions = (await sql<any[]>`select action from admin_audit_log where tenant_id = ${A.tenantId} and resource_id = ${sinkDest.id} order by created_at`).map((r) => r.action);
  t.ok(['log_destination.credential_prepare', 'log_destination.credential_abort', 'log_destination.credential_activate'].every((a) => actions.includes(a)));
});

t.test('tenant rule and cross-tenant access', async (t) => {
  t.equal((await B.call('GET', `/api/admin/destinations/${fsDest.id}`)).status, 404);
  t.equal((await B.call('POST', `/api/admin/destinations/${sinkDest.id}/credentials/prepare`, { secret_value: 'x' })).status, 404);
  for (const p of ['/api/admin/destinations', '/api/admin/admin-logging/chunks', '/api/admin/admin-logging/key-registries']) {
    let r = await B.call('GET', `${p}?tenant_id=${A.tenantId}`);
    t.equal(r.status, 403, p);
    t.equal(r.body.error, 'forbidden');
    r = await B.call('GET', `${p}?filter[tenant_id]=${encodeURIComponent(A.tenantId)}`);
    t.equal(r.status, 403, `${p} filter[tenant_id]`);
    r = await P.call('GET', `${p}?tenant_id=${A.tenantId}`);
    t.equal(r.status, 200, `platform ${p}`);
    t.ok(r.body.items.length > 0 && r.body.items.every((x: any) => x.tenant_id === A.tenantId));
    t.equal((await B.call('GET', `${p}?tenant_id=${B.tenantId}`)).status, 200, 'naming one\'s own tenant is fine');
  }
  const chunk = (await committed(A.tenantId))[0];
  t.equal((await B.call('GET', `/api/admin/admin-logging/chunks/${chunk.id}/download`)).status, 404);
  t.equal((await download(P.call, chunk.id, { 'x-tenant-id': A.tenantId })).status, 200, 'a platform admin may download another tenant\'s chunk');
  t.equal((await B.call('POST', '/api/admin/destinations', { name: 'p', kind: 'filesystem', scope: 'platform' })).status, 403);
  for (const bad of [{ name: 'x', kind: 'filesystem', directory: '../escape' }, { name: 'x', kind: 'filesystem', directory: '/etc' }, { name: 'x', kind: 'http_sink' }, { name: 'x', kind: 'ftp' }]) {
    const r = await B.call('POST', '/api/admin/destinations', bad);
    t.equal(r.status, 422, JSON.stringify(bad));
  }
});

t.teardown(() => worker.close());

