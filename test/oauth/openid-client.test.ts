import * as oidc from 'openid-client';
import t from 'tap';
import { startTestServer } from '../helpers/server.js';
import { setupTenant } from '../helpers/tokens.js';

// A real OAuth client library drives discovery, client_credentials, token exchange, introspection and revocation.
t.test('openid-client against the running server', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.close());
  const b = await setupTenant(srv, 'oidclib');
  const insecure = { execute: [oidc.allowInsecureRequests] };
  const exchanger = await oidc.discovery(new URL(srv.config.issuer), b.clients.exchanger.client_id, b.clients.exchanger.client_secret, oidc.ClientSecretBasic(b.clients.exchanger.client_secret), insecure);
  t.equal(exchanger.serverMetadata().issuer, srv.config.issuer, 'discovery');

  const cc = await oidc.clientCredentialsGrant(exchanger, { scope: 'read write' });
  t.equal(cc.token_type.toLowerCase(), 'bearer');
  t.equal(cc.scope, 'read write');
  t.type(cc.access_token, 'string');

  const ex = await oidc.genericGrantRequest(exchanger, 'urn:ietf:params:oauth:grant-type:token-exchange', {
    subject_token: cc.access_token, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    audience: b.clients.resource_server.audience, scope: 'read',
  });
  t.equal(ex.issued_token_type, 'urn:ietf:params:oauth:token-type:access_token');
  t.equal(ex.scope, 'read');

  const rs = await oidc.discovery(new URL(srv.config.issuer), b.clients.resource_server.client_id, b.clients.resource_server.client_secret, oidc.ClientSecretPost(b.clients.resource_server.client_secret), insecure);
  const active = await oidc.tokenIntrospection(rs, ex.access_token);
  t.equal(active.active, true);
  t.equal(active.scope, 'read');
  t.equal(active.client_id, b.clients.exchanger.client_id);

  await oidc.tokenRevocation(exchanger, ex.access_token);
  const after = await oidc.tokenIntrospection(rs, ex.access_token);
  t.same(after, { active: false }, 'revoked through the library');

  await t.rejects(oidc.genericGrantRequest(exchanger, 'urn:ietf:params:oauth:grant-type:token-exchange', {
    subject_token: ex.access_token, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
  }), { error: 'invalid_grant' } as Error & { error: string }, 'the library surfaces the RFC error of a revoked subject token');
});
