import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { decodeJwt } from '../../src/tokens/jwt.js';
import { api, type Api } from '../admin/helpers.js';
import { uniqueName } from '../helpers/env.js';
import { j } from '../helpers/http.js';
import { adminToken, basic } from '../helpers/tokens.js';
import { pkce, signInByEmailCode, startLoginEnv } from '../login/fixtures.js';

// RFC 9728 protected resource metadata: the documents svc serves for the resource servers registered in a
// tenant and for its own administration and check APIs, the resource_metadata challenge of their 401s,
// and an MCP-style walk by a client that knows only a resource's URL.
const env = await startLoginEnv();
t.teardown(() => env.close());
const { srv } = env;
const REDIRECT = 'https://app.example.test/cb';

interface Cred { client_id: string; client_secret: string }
const tenantId = uniqueName('prm');
const admin: Api = api(srv, await adminToken(srv, { tenantId, permissions: ['admin:*'] }));
const created = async (path: string, body: unknown) => {
  const r = await admin('POST', path, body);
  if (r.status !== 201) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
};

/**
 * A small resource server in this process: without a token it answers 401 with an RFC 9728 challenge
 * naming its metadata (served by svc); with one, it asks svc's /introspect (as its own client, strict
 * validation on its audience) and answers 200 only for an active token whose aud is itself.
 */
async function startResourceServer(): Promise<{ url: string; setup(metadataUrl: string, introspector: Cred): void; close(): Promise<void> }> {
  let metadataUrl = '';
  let introspector: Cred | undefined;
  const server = http.createServer((req, res) => {
    void (async () => {
      const me = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
      const refuse = (error?: string) => {
        res.writeHead(401, { 'www-authenticate': `Bearer ${error ? `error="${error}", ` : ''}resource_metadata="${metadataUrl}"`, 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: error ?? 'unauthorized' }));
      };
      const auth = req.headers.authorization;
      if (!auth?.startsWith('Bearer ')) return refuse();
      const answer = await fetch(`${srv.url}/introspect`, {
        method: 'POST', headers: { authorization: basic(introspector!.client_id, introspector!.client_secret), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: auth.slice(7) }),
      }).then((r) => r.json()) as { active: boolean; aud?: string | string[]; sub?: string; scope?: string };
      const aud = Array.isArray(answer.aud) ? answer.aud : [answer.aud];
      if (!answer.active || !aud.includes(me)) return refuse('invalid_token');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ hello: answer.sub, scope: answer.scope }));
    })().catch((err: Error) => { res.writeHead(500); res.end(err.message); });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    setup: (m, i) => { metadataUrl = m; introspector = i; },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const rsServer = await startResourceServer();
t.teardown(() => rsServer.close());
const registered = await created('/api/admin/resource-servers', { identifier: rsServer.url, name: 'Notes MCP server', scopes: ['notes:read'], documentation_uri: 'https://docs.example.test/notes' });
// The resource server's own credentials for /introspect, with strictValidation on its identifier.
const introspector: Cred = await created('/api/admin/clients', { name: 'notes rs', grant_types: [], audience: rsServer.url, can_introspect: true, strict_validation: true });
rsServer.setup(registered.resource_metadata, introspector);
// The client, registered by an administrator (dynamic registration is another feature), allowed the resource.
const client: Cred = await created('/api/admin/clients', {
  name: 'mcp client', grant_types: ['authorization_code', 'refresh_token'], scopes: ['openid', 'offline_access', 'notes:read', 'notes:write'],
  redirect_uris: [REDIRECT], allowed_audiences: [rsServer.url], first_party: true,
});

t.test('a registered resource server\'s metadata document', async (t) => {
  const res = await fetch(registered.resource_metadata);
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^application\/json/);
  t.same(await j(res), {
    resource: rsServer.url, authorization_servers: [srv.url], scopes_supported: ['notes:read'], bearer_methods_supported: ['header'],
    dpop_signing_alg_values_supported: ['ES256', 'EdDSA', 'Ed25519', 'PS256', 'RS256'], resource_name: 'Notes MCP server', resource_documentation: 'https://docs.example.test/notes',
  });
  // Another tenant that exists: A's resource server is not found under its name.
  const otherTenant = uniqueName('prm-b');
  await adminToken(srv, { tenantId: otherTenant, permissions: ['admin:*'] });
  for (const path of [
    `/.well-known/oauth-protected-resource/tenants/${otherTenant}/${registered.id}`,
    `/.well-known/oauth-protected-resource/tenants/${tenantId}/rs_000000000000000000000000`,
    `/.well-known/oauth-protected-resource/tenants/NOT_A_TENANT/${registered.id}`,
    `/.well-known/oauth-protected-resource/tenants/${tenantId}/rs_notanid`,
  ]) {
    const r = await fetch(srv.url + path);
    t.equal(r.status, 404, path);
    t.equal((await j(r)).error, 'not_found');
  }
  // A change is served at once by the process that made it (its cache entry is evicted).
  await admin('PUT', `/api/admin/resource-servers/${registered.id}`, { scopes: ['notes:read', 'notes:write'] });
  t.same((await j(await fetch(registered.resource_metadata))).scopes_supported, ['notes:read', 'notes:write']);
});

t.test('the administration and check APIs publish their metadata and point 401s at it', async (t) => {
  let res = await fetch(`${srv.url}/api/admin/users`);
  t.equal(res.status, 401);
  const adminMeta = `${srv.url}/.well-known/oauth-protected-resource/api/admin`;
  t.equal(res.headers.get('www-authenticate'), `Bearer resource_metadata="${adminMeta}"`);
  res = await fetch(`${srv.url}/api/admin/users`, { headers: { authorization: 'Bearer not-a-token' } });
  t.equal(res.headers.get('www-authenticate'), `Bearer resource_metadata="${adminMeta}"`, 'an invalid token too');
  t.same(await j(await fetch(adminMeta)), {
    resource: `${srv.url}/api/admin`, authorization_servers: [srv.url], scopes_supported: ['admin'], bearer_methods_supported: ['header'], resource_name: 'svc administration API',
  });

  res = await fetch(`${srv.url}/api/check`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user_id: 'usr_x', permission: 'docs:read' }) });
  t.equal(res.status, 401);
  const checkMeta = `${srv.url}/.well-known/oauth-protected-resource/api/check`;
  t.equal(res.headers.get('www-authenticate'), `Bearer resource_metadata="${checkMeta}"`);
  t.match(await j(await fetch(checkMeta)), { resource: `${srv.url}/api/check`, bearer_methods_supported: ['header'] });

  const discovery = await j(await fetch(`${srv.url}/.well-known/oauth-authorization-server`));
  t.same(discovery.protected_resources, [`${srv.url}/api/admin`]);
  const openapi = await j(await fetch(`${srv.url}/openapi.json`));
  for (const p of ['/.well-known/oauth-protected-resource/api/admin', '/.well-known/oauth-protected-resource/api/check', '/.well-known/oauth-protected-resource/tenants/{tenant}/{id}', '/api/admin/resource-servers', '/api/admin/resource-servers/{id}']) {
    t.ok(openapi.paths[p], `${p} in /openapi.json`);
  }
});

t.test('MCP-style walk: from a resource URL to a token it accepts', async (t) => {
  // 1. The client knows only the resource. It answers 401 naming its metadata.
  let res = await fetch(rsServer.url);
  t.equal(res.status, 401);
  const challenge = res.headers.get('www-authenticate')!;
  const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
  t.ok(metadataUrl, challenge);

  // 2. The protected resource metadata (served by svc): it must name the resource the client asked (RFC 9728 3.3).
  const prm = await j(await fetch(metadataUrl!));
  t.equal(prm.resource, rsServer.url);
  const issuer = prm.authorization_servers[0];

  // 3. The authorization server's metadata (RFC 8414), at the issuer's well-known location.
  const asm = await j(await fetch(`${issuer}/.well-known/oauth-authorization-server`));
  t.equal(asm.issuer, issuer);
  t.ok(asm.code_challenge_methods_supported.includes('S256'));

  // 4. Authorization code flow with PKCE and the resource (RFC 8707), scopes from the resource's metadata.
  const { verifier, challenge: pkceChallenge } = pkce();
  const q = new URLSearchParams({
    response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, scope: ['offline_access', ...prm.scopes_supported].join(' '),
    code_challenge: pkceChallenge, code_challenge_method: 'S256', resource: prm.resource, state: 'walk',
  });
  const back = await signInByEmailCode(env, `${asm.authorization_endpoint}?${q}`, 'mcp');
  t.equal(back.searchParams.get('state'), 'walk');
  t.equal(back.searchParams.get('iss'), issuer);
  res = await fetch(asm.token_endpoint, {
    method: 'POST', headers: { authorization: basic(client.client_id, client.client_secret), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code: back.searchParams.get('code')!, redirect_uri: REDIRECT, code_verifier: verifier, resource: prm.resource }),
  });
  t.equal(res.status, 200);
  const tok = await j(res);
  t.equal(decodeJwt(tok.access_token).payload.aud, rsServer.url, 'the token\'s aud is the resource');
  t.equal(tok.scope, 'notes:read notes:write', 'offline_access is the grant\'s, not the resource\'s');

  // 5. The resource accepts it (checked through svc's /introspect).
  res = await fetch(rsServer.url, { headers: { authorization: `Bearer ${tok.access_token}` } });
  t.equal(res.status, 200);
  t.match(await j(res), { hello: String, scope: 'notes:read notes:write' });

  // A token for another audience (svc's own account API) is refused by the resource.
  const account = await fetch(asm.token_endpoint, {
    method: 'POST', headers: { authorization: basic(client.client_id, client.client_secret), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tok.refresh_token, resource: issuer }),
  });
  t.equal(account.status, 400, 'the grant was for the resource only');
  t.equal((await j(account)).error, 'invalid_target');
});
