import t from 'tap';
import { j } from '../helpers/http.js';
import { startTestServer } from '../helpers/server.js';
import { adminToken, postForm, setupTenant } from '../helpers/tokens.js';
import { uniqueName } from '../helpers/env.js';
import { api, adminOf } from './helpers.js';
import { verifyPresentedToken } from '../../src/oauth/grants/token-exchange.js';
import { forgetRevocationState } from '../helpers/revocation.js';

// Tenants as a managed resource, over HTTP: lifecycle, who may do what, suspension.
const srv = await startTestServer();
t.teardown(() => srv.close());
const platform = await adminOf(srv, ['admin:*'], 'tplat', true);
const audit = async (action: string, resourceId: string) =>
  srv.deps.sql<{ action: string; tenant_id: string; result: string }[]>`select action, tenant_id, result from admin_audit_log where action = ${action} and resource_id = ${resourceId}`;

t.test('create, get, list, update, suspend, unsuspend over HTTP, audited in the platform tenant', async (t) => {
  const id = uniqueName('acme').toLowerCase().replace(/[^a-z0-9-]/g, '-');
  const created = await platform.call('POST', '/api/admin/tenants', { id, name: 'Acme', display_name: 'Acme Corp', settings: { access_token_ttl: 600, token_exchange_enabled: false }, admin_client: true });
  t.equal(created.status, 201, JSON.stringify(created.body));
  t.match(created.body, { id, name: 'Acme', display_name: 'Acme Corp', status: 'active', settings: { access_token_ttl: 600, token_exchange_enabled: false }, suspended_at: null, deleted_at: null });
  t.equal(created.body.admin_client.client_id, `${id}-admin`);
  t.type(created.body.admin_client.client_secret, 'string');

  // The first admin client works: client_credentials for the admin scope, then reads its own tenant.
  const tok = await j(await postForm(`${srv.url}/token`, created.body.admin_client, { grant_type: 'client_credentials', scope: 'admin' }));
  t.type(tok.access_token, 'string', JSON.stringify(tok));
  const own = await api(srv, tok.access_token)('GET', `/api/admin/tenants/${id}`);
  t.equal(own.status, 200);
  t.equal(own.body.id, id);
  t.equal((await api(srv, tok.access_token)('GET', `/api/admin/tenants/${platform.tenantId}`)).status, 403, 'a tenant admin cannot read another tenant');
  t.equal((await api(srv, tok.access_token)('GET', '/api/admin/tenants')).status, 403, 'nor list tenants');
  t.equal((await api(srv, tok.access_token)('POST', '/api/admin/tenants', { name: 'x' })).status, 403, 'nor create one');
  t.equal((await api(srv, tok.access_token)('DELETE', `/api/admin/tenants/${platform.tenantId}`)).status, 403, 'nor delete one');

  t.equal((await platform.call('POST', '/api/admin/tenants', { id, name: 'dup' })).status, 409);
  const bad = await platform.call('POST', '/api/admin/tenants', { id: 'Not A Slug', name: 'x' });
  t.equal(bad.status, 422);
  t.equal((await platform.call('POST', '/api/admin/tenants', { name: 'x', settings: { bogus: 1 } })).status, 422, 'unknown settings are refused');
  const generated = await platform.call('POST', '/api/admin/tenants', { name: 'Generated' });
  t.equal(generated.status, 201);
  t.match(generated.body.id, /^[a-z0-9][a-z0-9-]+$/);
  t.notOk('admin_client' in generated.body);

  t.equal((await platform.call('GET', '/api/admin/tenants/no-such-tenant')).status, 404);
  const got = await platform.call('GET', `/api/admin/tenants/${id}`);
  t.equal(got.body.display_name, 'Acme Corp');

  const upd = await platform.call('PUT', `/api/admin/tenants/${id}`, { display_name: null, settings: { refresh_token_ttl: 86400 } });
  t.equal(upd.status, 200);
  t.match(upd.body, { name: 'Acme', display_name: null, settings: { refresh_token_ttl: 86400 } });
  t.notOk('access_token_ttl' in upd.body.settings, 'settings are replaced as a whole');
  t.equal((await platform.call('PUT', '/api/admin/tenants/no-such-tenant', { name: 'x' })).status, 404);

  const sus = await platform.call('POST', `/api/admin/tenants/${id}/suspend`);
  t.equal(sus.status, 200);
  t.equal(sus.body.status, 'suspended');
  t.type(sus.body.suspended_at, 'number');
  const list = await platform.call('GET', '/api/admin/tenants?status=suspended&limit=100');
  t.ok(list.body.items.some((x: { id: string }) => x.id === id), 'status filter finds it');
  t.notOk((await platform.call('GET', '/api/admin/tenants?status=active&limit=100')).body.items.some((x: { id: string }) => x.id === id));
  const p1 = await platform.call('GET', '/api/admin/tenants?limit=1');
  t.equal(p1.body.items.length, 1);
  t.type(p1.body.cursor, 'string');
  const p2 = await platform.call('GET', `/api/admin/tenants?limit=1&cursor=${p1.body.cursor}`);
  t.not(p2.body.items[0].id, p1.body.items[0].id, 'the cursor pages on');

  const un = await platform.call('POST', `/api/admin/tenants/${id}/unsuspend`);
  t.equal(un.body.status, 'active');
  t.equal(un.body.suspended_at, null);
  t.equal((await platform.call('POST', `/api/admin/tenants/${platform.tenantId}/suspend`)).status, 409, 'a platform admin cannot suspend their own tenant');

  for (const a of ['tenant.created', 'tenant.updated', 'tenant.suspended', 'tenant.unsuspended']) {
    const rows = await audit(a, id);
    t.ok(rows.length >= 1 && rows.every((r) => r.tenant_id === platform.tenantId), `${a} audited in the platform tenant`);
  }
});

t.test('suspension: tokens inactive and exchange refused at once, admin 403 except platform; unsuspend restores', async (t) => {
  const b = await setupTenant(srv, 'tsusp');
  const id = b.tenant_id;
  const tenantAdmin = api(srv, await adminToken(srv, { tenantId: id, permissions: ['admin:*'] }));
  const cc = await j(await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials', scope: 'read write' }));
  const introspect = async () => j(await postForm(`${srv.url}/introspect`, b.clients.resource_server, { token: cc.access_token }));
  const exchange = () => postForm(`${srv.url}/token`, b.clients.exchanger, {
    grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: cc.access_token,
    subject_token_type: 'urn:ietf:params:oauth:token-type:access_token', audience: b.clients.resource_server.audience, scope: 'read',
  });
  t.equal((await introspect()).active, true);
  t.equal((await exchange()).status, 200);
  t.equal((await tenantAdmin('GET', '/api/admin/users')).status, 200);
  const ck = (await tenantAdmin('POST', '/api/admin/check-api-keys', { name: 'k', client_id: b.clients.exchanger.client_id })).body.key as string;
  const checkApi = async () => (await fetch(`${srv.url}/api/check`, { method: 'POST', headers: { authorization: `Bearer ${ck}`, 'content-type': 'application/json' }, body: JSON.stringify({ user_id: 'u_nope', permission: 'x:y' }) })).status;
  t.equal(await checkApi(), 404, 'the check API answers (no such user)');

  t.equal((await platform.call('POST', `/api/admin/tenants/${id}/suspend`)).status, 200);
  t.equal(await checkApi(), 403, 'the check API refuses a suspended tenant');
  t.same(await introspect(), { active: false }, 'inactive at introspection (also past the introspection cache)');
  const ex = await exchange();
  t.equal(ex.status, 400);
  const exBody = await j(ex);
  // Refused at the client's tenant (cached status); the subject token's own check (the MGET mark) backs it.
  t.equal(exBody.error, 'unauthorized_client');
  t.match(exBody.error_description, /suspended/);
  // The subject token itself is refused by the revocation read (the tenant mark in the same MGET), whatever the caching client.
  await t.rejects(verifyPresentedToken(srv.deps, cc.access_token, id, 'subject'), { code: 'invalid_grant', message: /tenant is suspended/ });
  const fresh = await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials', scope: 'read' });
  t.equal(fresh.status, 400, 'no new tokens for a suspended tenant');
  t.equal((await j(fresh)).error, 'unauthorized_client');
  const denied = await tenantAdmin('GET', '/api/admin/users');
  t.equal(denied.status, 403);
  t.equal(denied.body.error, 'forbidden');
  const authorizeUrl = `${srv.url}/authorize?response_type=code&client_id=${encodeURIComponent(b.clients.web.client_id)}&redirect_uri=${encodeURIComponent(b.clients.web.redirect_uris[0]!)}&scope=openid&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256&state=s`;
  const login = await fetch(authorizeUrl, { redirect: 'manual' });
  t.equal(login.status, 403, 'the login page refuses a suspended tenant');
  t.match(await login.text(), /suspended/);
  const asPlatform = await platform.call('GET', '/api/admin/users', undefined, { 'x-tenant-id': id });
  t.equal(asPlatform.status, 200, 'a platform admin still administers the suspended tenant');

  // Survives Redis losing its data: the mark is refilled from Postgres with the revocation state.
  await forgetRevocationState(srv.deps.redis);
  await srv.deps.tokens.revocations.ensureLoaded();
  t.same(await introspect(), { active: false }, 'still suspended after a refill from Postgres');

  t.equal((await platform.call('POST', `/api/admin/tenants/${id}/unsuspend`)).status, 200);
  t.equal((await introspect()).active, true, 'a suspension is not a revocation: the token is active again');
  t.equal((await exchange()).status, 200);
  t.equal((await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials', scope: 'read' })).status, 200, 'tokens are issued again');
  t.equal(await checkApi(), 404, 'the check API answers again');
  t.equal((await tenantAdmin('GET', '/api/admin/users')).status, 200);
  t.not((await fetch(authorizeUrl, { redirect: 'manual' })).status, 403, 'logins open again');
});

t.test('settings: changed on one process, enforced by both within 5 s (token lifetime, exchange, login name)', async (t) => {
  const srv2 = await startTestServer({ REDIS_PREFIX: srv.config.redisPrefix });
  t.teardown(() => srv2.close());
  const b = await setupTenant(srv, 'tset');
  const id = b.tenant_id;
  const cc = async (s: { url: string }) => j(await postForm(`${s.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials', scope: 'read' }));
  const exchange = async (s: { url: string }) => {
    const subject = (await cc(s)).access_token;
    return postForm(`${s.url}/token`, b.clients.exchanger, {
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: subject,
      subject_token_type: 'urn:ietf:params:oauth:token-type:access_token', audience: b.clients.resource_server.audience, scope: 'read',
    });
  };
  // Both processes have read (and cached) the tenant's empty settings.
  for (const s of [srv, srv2]) {
    t.equal((await cc(s)).expires_in, srv.config.accessTokenTtlSeconds);
    t.equal((await exchange(s)).status, 200);
  }
  const upd = await platform.call('PUT', `/api/admin/tenants/${id}`, { display_name: 'Tset Login Name', settings: { access_token_ttl: 120, token_exchange_enabled: false } });
  t.equal(upd.status, 200);
  for (const s of [srv, srv2]) {
    const started = Date.now();
    let seen = false;
    while (Date.now() - started < 5000 && !seen) {
      seen = (await cc(s)).expires_in === 120;
      if (!seen) await new Promise((r) => setTimeout(r, 50));
    }
    t.ok(seen, `process ${s.url} uses the tenant's access token lifetime within 5 s`);
    const ex = await exchange(s);
    t.equal(ex.status, 400);
    t.equal((await j(ex)).error, 'unauthorized_client', 'token exchange disabled for the tenant');
  }
  // A lifetime above the server's is bounded by the server's.
  t.equal((await platform.call('PUT', `/api/admin/tenants/${id}`, { settings: { access_token_ttl: 86400 } })).status, 200);
  let bounded = false;
  const started = Date.now();
  while (Date.now() - started < 5000 && !bounded) { bounded = (await cc(srv2)).expires_in === srv.config.accessTokenTtlSeconds; if (!bounded) await new Promise((r) => setTimeout(r, 50)); }
  t.ok(bounded, 'bounded by the server lifetime');
  const page = await fetch(`${srv2.url}/authorize?response_type=code&client_id=${encodeURIComponent(b.clients.web.client_id)}&redirect_uri=${encodeURIComponent(b.clients.web.redirect_uris[0]!)}&scope=openid&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256&state=s`, { headers: { accept: 'text/html' } });
  t.match(await page.text(), /Tset Login Name/, 'the login page shows the tenant display name');

  // Sign-in methods: email code switched off for the tenant is refused before any code is made.
  t.equal((await platform.call('PUT', `/api/admin/tenants/${id}`, { settings: { login_methods: ['passkey'], email_code_rate_limits: { per_address: 1 } } })).status, 200);
  const generate = () => fetch(`${srv2.url}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'x@example.com', client_id: b.clients.web.client_id }) });
  // The other process sees the change by pub/sub; poll (bounded by the 5 s promise) rather than race it.
  let gen = await generate();
  for (const until = Date.now() + 5000; gen.status !== 403 && Date.now() < until;) { await new Promise((r) => setTimeout(r, 50)); gen = await generate(); }
  t.equal(gen.status, 403);
  const gb = await j(gen);
  t.equal(gb.error, 'forbidden');
  t.match(gb.error_description, /Email code sign-in is disabled/);
  t.equal((await platform.call('PUT', `/api/admin/tenants/${id}`, { settings: { email_code_rate_limits: { per_address: 0 } } })).status, 422, 'limits are validated');
});
