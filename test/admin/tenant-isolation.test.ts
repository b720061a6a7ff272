import t from 'tap';
import { generateKeyPairSync } from 'node:crypto';
import { buildRouter } from '../../src/app.js';
import { uniqueName } from '../helpers/env.js';
import { j } from '../helpers/http.js';
import { startTestServer } from '../helpers/server.js';
import { postForm } from '../helpers/tokens.js';
import { adminOf, api } from './helpers.js';

// Tenant isolation, table-driven over every /api/admin route in the router: a tenant-scoped admin of
// tenant A holding admin:* gets 403 or 404 for every read and write of tenant B's resources, and B's
// resources are unchanged afterwards. A route added without an entry here fails this test.
const srv = await startTestServer();
t.teardown(() => srv.close());
// Tenants A and B are made through the tenants API, each with its first admin client, whose
// client_credentials token (admin:*, tenant scope `allow` on its own tenant) is the tenant's admin.
const platform = await adminOf(srv, ['admin:*'], 'iso-plat', true);
async function tenantViaApi(label: string): Promise<{ tenantId: string; call: ReturnType<typeof api> }> {
  const r = await platform.call('POST', '/api/admin/tenants', { id: uniqueName(label), name: label, admin_client: true });
  if (r.status !== 201) throw new Error(`tenant ${label}: ${r.status} ${JSON.stringify(r.body)}`);
  const tok = await j(await postForm(`${srv.url}/token`, r.body.admin_client, { grant_type: 'client_credentials', scope: 'admin' }));
  return { tenantId: r.body.id, call: api(srv, tok.access_token) };
}
const A = await tenantViaApi('iso-a');
const B = await tenantViaApi('iso-b');
const jwk = () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });

// Tenant B's resources, created by B's own admin.
const ok = <T>(r: { status: number; body: T }, what: string): T => { if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`); return r.body; };
const bUser: any = ok(await B.call('POST', '/api/admin/users', { email: 'b-user@example.com', name: 'B user' }), 'user');
const bRole: any = ok(await B.call('POST', '/api/admin/roles', { name: 'b-role', permissions: ['docs:read'] }), 'role');
ok(await B.call('POST', `/api/admin/users/${bUser.id}/roles`, { role_id: bRole.id }), 'assign');
const bClient: any = ok(await B.call('POST', '/api/admin/clients', { name: 'B client', grant_types: ['client_credentials'] }), 'client');
const bPrincipal: any = ok(await B.call('POST', '/api/admin/machine-access/principals', { displayName: 'B bot', principalType: 'ci', permissions: [] }), 'principal');
const bCred: any = ok(await B.call('POST', `/api/admin/machine-access/principals/${bPrincipal.id}/credentials`, { publicJwk: jwk(), alg: 'ES256', displayName: 'k' }), 'credential');
const bKey: any = ok(await B.call('POST', '/api/admin/check-api-keys', { name: 'B key', client_id: bClient.client_id }), 'check key');
const bPolicy: any = ok(await B.call('POST', '/api/admin/admin-policies', { name: 'B policy', priority: 1, effect: 'deny', conditions: [], resource_types: ['nothing'], actions: ['read'] }), 'policy');
const bHook: any = ok(await B.call('POST', '/api/admin/webhooks', { name: 'B hook', url: 'http://127.0.0.1:9/hook', events: ['user.created'] }), 'admin.webhook');
const bResourceServer: any = ok(await B.call('POST', '/api/admin/resource-servers', { identifier: 'https://b.iso.example/api', name: 'B api', scopes: ['read'] }), 'resource server');
const bAudit: any = ok(await B.call('GET', '/api/admin/admin-audit-log?limit=1'), 'audit').items[0];
const bImport = await srv.deps.store.forTenant(B.tenantId).userJobs.insert('imp_b_iso', 'import', { catalog: { entries: [{ id: 'email', namespace: 'u', path: 'email', valueType: 'email', cardinality: 'one', classification: 'pii' }] }, columnToPath: { E: 'e' }, edges: [{ id: 'x', sourceRef: 'e', targetRef: 'email' }] }, 'b-admin', Buffer.from('E\nb@example.com\n'));
const bExport = await srv.deps.store.forTenant(B.tenantId).userJobs.insert('exp_b_iso', 'export', bImport.mapping, 'b-admin', null);
ok(await B.call('POST', '/api/admin/clients', { name: 'B approvals rs', grant_types: [], audience: 'https://b.iso.example' }), 'approvals audience');
const bApproval: any = ok(await B.call('POST', '/api/admin/approvals', { request_surface: 's', requested_action: 'read', target_subject_type: 'user', target_subject_id: bUser.id, resource_class: 'c', reason_code: 'r', audience: 'https://b.iso.example', approvals: [{ step_key: 'a', side: 'admin_operator', subject_type: 'admin_user', method: 'portal_confirm' }] }), 'approval');
const bTask = (await srv.deps.store.forTenant(B.tenantId).reviewTasks.insert({ taskType: 'import_warning', reasons: [], pendingChange: { email: 'b-task@example.com' } }))!;
// B's log archive: a destination and a quota policy through B's API; a key registry, a committed chunk and a
// rewrap job written as the log worker would (the archive run itself is covered by test/logging/).
const bDest: any = (ok(await B.call('POST', '/api/admin/destinations', { name: 'B dest', kind: 'filesystem' }), 'destination') as any).destination;
const bQuota: any = ok(await B.call('POST', '/api/admin/logging-policies/quotas', { metric_name: 'records', window_kind: 'hour', hard_limit: 10, enforcement_mode: 'observe' }), 'quota');
const bRegistry = await srv.deps.store.forTenant(B.tenantId).logArchive.ensureRegistry('lkr_b_iso', 'token', 'data', () => Buffer.alloc(60));
await srv.deps.sql`insert into log_chunks (tenant_id, id, log_type, plane, hour_start, status, record_count) values (${B.tenantId}, 'lch_b_iso', 'token', 'data', 0, 'committed', 1)`;
await srv.deps.sql`insert into log_rewrap_jobs (tenant_id, id, batch_id, key_registry_id, chunk_id, from_version) values (${B.tenantId}, 'lrw_b_iso', 'lrb_b_iso', ${bRegistry.id}, 'lch_b_iso', 1)`;

// B's dynamic registration: an initial access token and a trusted software statement issuer (issue 32).
const bIat: any = ok(await B.call('POST', '/api/admin/registration/initial-access-tokens', { description: 'B token' }), 'initial access token');
const bIssuer: any = ok(await B.call('POST', '/api/admin/registration/software-statement-issuers', { issuer: 'https://software.b.iso.example', jwks: { keys: [jwk()] } }), 'software statement issuer');
ok(await B.call('PUT', '/api/admin/registration/policy', { open_registration: true, max_clients: 3 }), 'registration policy');
for (const [what, id] of Object.entries({ bDest: bDest?.id, bQuota: bQuota?.id, bRegistry: bRegistry.id })) if (typeof id !== 'string') throw new Error(`no id for ${what}`);
const secrets = [bIat.id, bIat.token, bIssuer.id, 'https://software.b.iso.example', bApproval.public_request_id, B.tenantId, bUser.id, bRole.id, bClient.client_id, bPrincipal.id, bPrincipal.clientId, bCred.id, bKey.id, bPolicy.id, bHook.id, bResourceServer.id, bAudit.id, bTask.id, bImport.id, bExport.id, bDest.id, bQuota.id, bRegistry.id, 'lch_b_iso', 'lrb_b_iso'];

/** B's id for each path parameter, by the route's path. */
function fill(path: string): string {
  const id = path.startsWith('/api/admin/admin-audit-log') ? bAudit.id
    : path.startsWith('/api/admin/users') ? bUser.id
      : path.startsWith('/api/admin/roles') ? bRole.id
        : path.startsWith('/api/admin/machine-access/principals') ? bPrincipal.id
          : path.startsWith('/api/admin/check-api-keys') ? bKey.id
            : path.startsWith('/api/admin/admin-policies') ? bPolicy.id
              : path.startsWith('/api/admin/webhooks') ? bHook.id
                : path.startsWith('/api/admin/tenants') ? B.tenantId
                  : path.startsWith('/api/admin/resource-servers') ? bResourceServer.id : 'unmapped';
  if (path.startsWith('/api/admin/registration/initial-access-tokens')) return path.replace(':id', bIat.id);
  if (path.startsWith('/api/admin/registration/software-statement-issuers')) return path.replace(':id', bIssuer.id);
  if (path.startsWith('/api/admin/user-imports')) return path.replace(':id', bImport.id);
  if (path.startsWith('/api/admin/destinations')) return path.replace(':id', bDest.id);
  if (path.startsWith('/api/admin/logging-policies/quotas')) return path.replace(':id', bQuota.id);
  if (path.startsWith('/api/admin/admin-logging/key-registries')) return path.replace(':id', bRegistry.id).replace(':version', '1');
  if (path.startsWith('/api/admin/admin-logging/chunks')) return path.replace(':id', 'lch_b_iso');
  if (path.startsWith('/api/admin/admin-logging/rewrap-jobs')) return path.replace(':id', 'lrb_b_iso');
  if (path.startsWith('/api/admin/user-exports')) return path.replace(':id', bExport.id);
  if (path.startsWith('/api/admin/field-mapping/review-tasks')) return path.replace(':reviewTaskId', bTask.id);
  // Plugins are global (the registry); only their configuration is per tenant (checked by the row fingerprint).
  if (path.startsWith('/api/admin/plugins')) return path.replace(':id', 'smtp-mailer');
  // Lookup-key rotations are environment-wide and platform-only: a tenant administrator is refused any of them.
  if (path.startsWith('/api/admin/platform/control-plane/lookup-hmac')) return path.replace(':operationId', 'iso-rotation');
  if (path.startsWith('/api/admin/approvals')) {
    // No grant of B exists before approval; B's real request id comes first in the path, so it decides.
    return path.replace(':requestId', bApproval.public_request_id).replace(':stepId', bApproval.approvals[0].id).replace(':grantId', 'agr_of_b_none');
  }
  return path.replace(':id', id).replace(':clientId', bClient.client_id).replace(':roleId', bRole.id)
    .replace(':credentialId', bCred.id).replace(':deliveryId', 'whd_nope').replace(':sessionId', 'rtf_nope').replace(':consentId', 'cns_nope');
}

const policyBody = { name: 'x', priority: 1, effect: 'deny', conditions: [], resource_types: ['users'], actions: ['write'] };
/** A valid body per write route (so schema validation cannot mask the tenant check); `b` marks bodies that name B's resources. */
const bodies: Record<string, { body: unknown; b?: boolean }> = {
  'POST /api/admin/users': { body: { email: 'a-new@example.com' } },
  'PUT /api/admin/users/:id': { body: { name: 'pwned' } },
  'POST /api/admin/roles': { body: { name: 'x', permissions: [] } },
  'PUT /api/admin/roles/:id': { body: { name: 'pwned' } },
  'POST /api/admin/users/:id/roles': { body: { role_id: bRole.id } },
  'POST /api/admin/clients': { body: { name: 'x', grant_types: [] } },
  'PUT /api/admin/clients/:clientId': { body: { name: 'pwned' } },
  'PUT /api/admin/registration/policy': { body: { open_registration: false, max_clients: 0 } },
  'POST /api/admin/registration/initial-access-tokens': { body: { description: 'x' } },
  'POST /api/admin/registration/software-statement-issuers': { body: { issuer: 'https://software.b.iso.example', jwks: { keys: [jwk()] } } },
  'POST /api/admin/machine-access/principals': { body: { displayName: 'x', principalType: 'ci', permissions: [] } },
  'PUT /api/admin/machine-access/principals/:id': { body: { displayName: 'pwned' } },
  'POST /api/admin/machine-access/principals/:id/credentials': { body: { publicJwk: jwk(), alg: 'ES256', displayName: 'x' } },
  'POST /api/admin/machine-access/principals/:id/credentials/:credentialId/rotate': { body: { publicJwk: jwk(), alg: 'ES256', displayName: 'x' } },
  'POST /api/admin/machine-access/principals/:id/credentials/:credentialId/revoke': { body: {} },
  'PUT /api/admin/settings/refresh-token-sharding': { body: { shardCount: 16, clientId: bClient.client_id }, b: true },
  'PUT /api/admin/settings/auth-code-sharding': { body: { shardCount: 16 }, b: true },
  'PUT /api/admin/settings/login-lockout': { body: { max_failed_logins: 3 } },
  'PUT /api/admin/settings/pii-partitions': { body: { policy_partition: null, use_residence: true, rules: [] } },
  'POST /api/admin/users/:id/pii-partition': { body: { partition: 'default' } },
  'POST /api/admin/check-api-keys': { body: { name: 'x', client_id: bClient.client_id }, b: true },
  'POST /api/admin/admin-policies': { body: policyBody },
  'PUT /api/admin/admin-policies/:id': { body: { name: 'pwned' } },
  'POST /api/admin/webhooks': { body: { name: 'x', url: 'http://127.0.0.1:9/x', events: ['user.created'] } },
  'PUT /api/admin/webhooks/:id': { body: { name: 'pwned' } },
  'POST /api/admin/resource-servers': { body: { identifier: 'https://a-new.iso.example', name: 'x', scopes: [] } },
  'PUT /api/admin/resource-servers/:id': { body: { name: 'pwned' } },
  'POST /api/admin/webhooks/:id/test': { body: {} },
  'POST /api/admin/approvals': { body: { request_surface: 's', requested_action: 'read', target_subject_type: 'user', target_subject_id: 'u', resource_class: 'c', reason_code: 'r', audience: 'https://nope.example', approvals: [{ step_key: 'a', side: 'admin_operator', subject_type: 'admin_user', method: 'portal_confirm' }] } },
  'POST /api/admin/approvals/:requestId/cancel': { body: {} },
  'POST /api/admin/approvals/:requestId/steps/:stepId/approve': { body: {} },
  'POST /api/admin/approvals/:requestId/steps/:stepId/deny': { body: {} },
  'POST /api/admin/approvals/:requestId/steps/:stepId/artifacts': { body: {} },
  'POST /api/admin/approvals/:requestId/grants/:grantId/revoke': { body: {} },
  'POST /api/admin/approvals/:requestId/grants/:grantId/subject-token': { body: { client_id: bClient.client_id }, b: true },
  'POST /api/admin/user-imports': { body: { mapping: { catalog: { entries: [{ id: 'email', namespace: 'u', path: 'email', valueType: 'email', cardinality: 'one', classification: 'pii' }] }, columnToPath: { E: 'e' }, edges: [{ id: 'x', sourceRef: 'e', targetRef: 'email' }] }, csv: 'E\na-import@example.com\n' } },
  'POST /api/admin/user-exports': { body: { mapping: { catalog: { entries: [{ id: 'email', namespace: 'u', path: 'email', valueType: 'email', cardinality: 'one', classification: 'pii' }] }, columnToPath: { E: 'e' }, edges: [{ id: 'x', sourceRef: 'e', targetRef: 'email' }] } } },
  'PUT /api/admin/plugins/:id/config': { body: { config: { from_name: 'pwned' } } },
  'POST /api/admin/field-mapping/preview/csv': { body: { rows: [], columnToPath: {}, catalog: { entries: [{ id: 'e', namespace: 'u', path: 'email', valueType: 'email', cardinality: 'one', classification: 'pii' }] }, edges: [] } },
  'POST /api/admin/field-mapping/review-tasks/:reviewTaskId/transition': { body: { status: 'approved' } },
  'POST /api/admin/tenants': { body: { name: 'x' } },
  'PUT /api/admin/tenants/:id': { body: { name: 'pwned' } },
  'PUT /api/admin/logging-policies/settings': { body: { token_decision_logging: true } },
  'POST /api/admin/destinations': { body: { name: 'x', kind: 'filesystem' } },
  'PATCH /api/admin/destinations/:id': { body: { name: 'pwned' } },
  'POST /api/admin/destinations/:id/credentials/prepare': { body: { secret_value: 'pwned-secret-value' } },
  'POST /api/admin/admin-logging/rewrap-jobs': { body: { key_registry_id: bRegistry.id }, b: true },
  'POST /api/admin/logging-policies/quotas': { body: { metric_name: 'records', window_kind: 'hour', hard_limit: 10, enforcement_mode: 'observe' } },
  'PATCH /api/admin/logging-policies/quotas/:id': { body: { hard_limit: 99 } },
  'POST /api/admin/platform/control-plane/lookup-hmac/rotations': { body: { operationId: 'iso-rotation' } },
  'POST /api/admin/platform/control-plane/lookup-hmac/rotations/:operationId/advance': { body: {} },
  'POST /api/admin/platform/control-plane/lookup-hmac/rotations/:operationId/abort': { body: {} },
};
/** Routes only platform admins may call: a tenant admin's listing is refused outright rather than filtered. */
const platformOnly = new Set(['GET /api/admin/tenants', 'POST /api/admin/tenants', 'POST /api/admin/platform/control-plane/lookup-hmac/rotations', 'GET /api/admin/dashboard']);
const queries: Record<string, string> = {
  'GET /api/admin/settings/refresh-token-sharding': `?clientId=${bClient.client_id}`,
  'GET /api/admin/settings/pii-partitions/stats': `?tenant_id=${B.tenantId}`,
};

const routes = buildRouter(srv.deps).routes.filter((r) => r.path.startsWith('/api/admin/'));

// Every row of tenant B, in every table with a tenant_id, before the sweep; compared after it, so a
// route that writes into another tenant fails whatever its answer was (new tables are included).
const bTables = (await srv.deps.sql<{ table_name: string }[]>`
  select c.table_name from information_schema.columns c join information_schema.tables t using (table_schema, table_name)
  where c.table_schema = current_schema() and c.column_name = 'tenant_id' and t.table_type = 'BASE TABLE' order by 1`).map((r) => r.table_name);
// Written asynchronously by B's own earlier changes (the outbox dispatcher), not by the sweep.
// The log tables too: the log worker of any test file archives B's audit records, meters them and checks health.
const ASYNC_TABLES = new Set(['event_outbox', 'webhook_deliveries', 'log_records', 'log_chunks', 'log_deliveries', 'log_key_registries', 'log_key_versions', 'log_destinations', 'log_quota_evaluations', 'log_usage_aggregates']);
async function fingerprintB(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const table of bTables.filter((x) => !ASYNC_TABLES.has(x))) {
    const [row] = await srv.deps.sql.unsafe(`select count(*)::text || ':' || coalesce(md5(string_agg(x::text, '|' order by x::text)), '') as f from ${table} x where tenant_id = $1`, [B.tenantId]);
    out[table] = String(row!.f);
  }
  return out;
}
const beforeSweep = await fingerprintB();

t.test('every admin route is in the table', async (t) => {
  t.ok(routes.length >= 50, `${routes.length} admin routes`);
  for (const r of routes) if (r.bodySchema) t.ok(bodies[`${r.method} ${r.path}`], `body for ${r.method} ${r.path}`);
  // A new route's path parameters must name one of B's resources, or "not found" would prove nothing.
  for (const r of routes) {
    const filled = fill(r.path);
    t.notOk(/:|unmapped/.test(filled), `${r.method} ${r.path} addresses B's resource (${filled})`);
  }
});


for (const r of routes) {
  const key = `${r.method} ${r.path}`;
  t.test(key, async (t) => {
    const path = fill(r.path) + (queries[key] ?? '');
    const body = bodies[key]?.body ?? (r.bodySchema ? {} : undefined);
    // 1. Naming tenant B explicitly is refused, whatever the route.
    const named = await A.call(r.method, path, body, { 'x-tenant-id': B.tenantId });
    t.equal(named.status, 403, `X-Tenant-Id of B: ${JSON.stringify(named.body)}`);
    t.equal(named.body.error, 'forbidden');
    // 2. Addressing B's resources by id from A's own context finds nothing.
    const globalId = r.path.startsWith('/api/admin/plugins/');
    const touchesB = (r.path.includes(':') && !globalId) || bodies[key]?.b === true || queries[key] !== undefined;
    if (globalId) {
      const res = await A.call(r.method, path, body);
      t.ok(res.status < 500, `A's own view of a global plugin: ${res.status}`);
    } else if (touchesB) {
      const res = await A.call(r.method, path, body);
      t.ok(res.status === 403 || res.status === 404, `by id: ${res.status} ${JSON.stringify(res.body)}`);
    } else if (platformOnly.has(key)) {
      const res = await A.call(r.method, path, body);
      t.equal(res.status, 403, `platform only: ${JSON.stringify(res.body)}`);
    } else if (r.method === 'GET') {
      const res = await A.call(r.method, path);
      t.equal(res.status, 200);
      const text = JSON.stringify(res.body);
      for (const s of secrets) t.notOk(text.includes(s), `A's listing does not contain ${s}`);
    }
  });
}

// Issue 29 item 8: the tenant routes act on the caller's own tenant whatever X-Tenant-Id says, and a
// tenant admin reading its own tenant used to get it back with B named in the header. One rule: 403.
t.test("X-Tenant-Id of B is 403 on A's own tenant routes too", async (t) => {
  t.equal((await A.call('GET', `/api/admin/tenants/${A.tenantId}`)).status, 200, 'A reads its own tenant without the header');
  const tenantRoutes = routes.filter((r) => r.path.startsWith('/api/admin/tenants'));
  t.ok(tenantRoutes.length >= 5, `${tenantRoutes.length} tenant routes`);
  for (const r of tenantRoutes) {
    const key = `${r.method} ${r.path}`;
    const named = await A.call(r.method, r.path.replace(':id', A.tenantId), bodies[key]?.body ?? (r.bodySchema ? {} : undefined), { 'x-tenant-id': B.tenantId });
    t.equal(named.status, 403, `${key}: ${JSON.stringify(named.body)}`);
    t.equal(named.body.error, 'forbidden');
    t.notOk(JSON.stringify(named.body).includes(`"id":"${A.tenantId}"`), 'no tenant record in the answer');
  }
});

t.test("no row of B changed in any table", async (t) => {
  t.ok(bTables.length >= 20, `${bTables.length} tables with tenant_id`);
  t.same(await fingerprintB(), beforeSweep);
});

t.test("B's resources are unchanged", async (t) => {
  t.match((await B.call('GET', `/api/admin/users/${bUser.id}`)).body, { name: 'B user', status: 'active', roles: [{ id: bRole.id }] });
  t.match((await B.call('GET', `/api/admin/roles/${bRole.id}`)).body, { name: 'b-role' });
  t.match((await B.call('GET', `/api/admin/clients/${bClient.client_id}`)).body, { name: 'B client', status: 'active' });
  const p = (await B.call('GET', `/api/admin/machine-access/principals/${bPrincipal.id}`)).body;
  t.match(p, { displayName: 'B bot', status: 'active' });
  t.same(p.credentials.map((c: any) => c.status), ['active']);
  t.match((await B.call('GET', `/api/admin/check-api-keys/${bKey.id}`)).body, { is_active: true });
  t.match((await B.call('GET', `/api/admin/admin-policies/${bPolicy.id}`)).body, { name: 'B policy', enabled: false });
  t.match((await B.call('GET', `/api/admin/webhooks/${bHook.id}`)).body, { name: 'B hook', status: 'active' });
  t.match((await B.call('GET', `/api/admin/resource-servers/${bResourceServer.id}`)).body, { name: 'B api', scopes: ['read'] });
  t.equal((await B.call('GET', '/api/admin/machine-access/principals')).body.items.length, 1);
  t.match((await B.call('GET', `/api/admin/user-imports/${bImport.id}`)).body, { status: 'queued' });
  t.match((await B.call('GET', `/api/admin/user-exports/${bExport.id}`)).body, { status: 'queued' });
  t.match((await B.call('GET', `/api/admin/field-mapping/review-tasks/${bTask.id}`)).body, { status: 'open', pending_fields: ['email'] });
  const dest = await B.call('GET', `/api/admin/destinations/${bDest.id}`);
  t.match(dest.body, { name: 'B dest', rotation_state: 'idle' }, JSON.stringify(dest.body));
  t.match((await B.call('GET', `/api/admin/logging-policies/quotas/${bQuota.id}`)).body, { hard_limit: 10 });
  t.match((await B.call('GET', `/api/admin/registration/initial-access-tokens/${bIat.id}`)).body, { status: 'active', uses: 0 });
  t.match((await B.call('GET', `/api/admin/registration/software-statement-issuers/${bIssuer.id}`)).body, { issuer: 'https://software.b.iso.example' });
  t.match((await B.call('GET', '/api/admin/registration/policy')).body, { open_registration: true, max_clients: 3 });
});

t.test('every admin route is in /openapi.json with its permission, schemas and error responses', async (t) => {
  const doc = await (await fetch(`${srv.url}/openapi.json`)).json() as any;
  for (const r of routes) {
    const op = doc.paths[r.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')]?.[r.method.toLowerCase()];
    if (!op) { t.fail(`${r.method} ${r.path} missing`); continue; }
    t.match(op['x-permission'], /^admin:[a-z-]+(:[a-z-]+)+$/, `${r.method} ${r.path} permission`);
    t.ok(op.responses['401'] && op.responses['403'], `${r.method} ${r.path} error responses`);
    if (r.bodySchema) t.ok(doc.components.schemas[r.bodySchema], `${r.bodySchema} in components`);
  }
  t.ok(doc.paths['/api/check']?.post, 'the check API is documented');
});

t.test("a client of A cannot introspect or exchange B's tokens", async (t) => {
  const mk = async (who: typeof A, name: string, body: Record<string, unknown>) => ok(await who.call('POST', '/api/admin/clients', { name, ...body }), name) as any;
  const aud = 'https://api.iso.example';
  const bApp = await mk(B, 'B app', { grant_types: ['client_credentials'], scopes: ['read'], allowed_audiences: [aud] });
  const bRs = await mk(B, 'B rs', { grant_types: [], audience: aud, can_introspect: true });
  const aRs = await mk(A, 'A rs', { grant_types: [], audience: aud, can_introspect: true });
  const aEx = await mk(A, 'A exchanger', { grant_types: ['client_credentials', 'urn:ietf:params:oauth:grant-type:token-exchange'], scopes: ['read'], allowed_audiences: [aud] });
  const bTok = await j(await postForm(`${srv.url}/token`, bApp, { grant_type: 'client_credentials', scope: 'read' }));
  t.ok(bTok.access_token, 'B issued a token');
  t.equal((await j(await postForm(`${srv.url}/introspect`, bRs, { token: bTok.access_token }))).active, true, "B's own resource server sees it active");
  const seen = await j(await postForm(`${srv.url}/introspect`, aRs, { token: bTok.access_token }));
  t.same(seen, { active: false }, "A's resource server: inactive, nothing else");
  const ex = await postForm(`${srv.url}/token`, aEx, { grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: bTok.access_token, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token', audience: aud });
  t.equal(ex.status, 400);
  const body = await j(ex);
  t.equal(body.error, 'invalid_grant');
  t.notOk(body.access_token);
});
