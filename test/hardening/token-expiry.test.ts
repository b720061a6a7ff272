import t from 'tap';
import { startTestServer } from '../helpers/server.js';
import { postForm, setupTenant } from '../helpers/tokens.js';
import { waitFor } from '../helpers/processes.js';

// Issue 21 item 11: our own access tokens are inactive at introspection as soon as exp passes (the
// 5 s clock tolerance is for tokens minted elsewhere), also when an active answer was cached.
const srv = await startTestServer();
t.teardown(() => srv.close());
const b = await setupTenant(srv, 'expiry');

t.test('an own token is inactive from exp on, cached or not', async (t) => {
  // Issued to the resource server itself, so strictValidation holds without further setup.
  const c = b.clients.resource_server;
  const issued = await srv.deps.tokens.accessTokens.issue({ tenant: b.tenant_id, sub: c.client_id, clientId: c.client_id, aud: b.clients.resource_server.audience, scope: 'read', ttlSeconds: 6 });
  const exp = JSON.parse(Buffer.from(issued.token.split('.')[1]!, 'base64url').toString()).exp as number;
  const first = await (await postForm(`${srv.url}/introspect`, b.clients.resource_server, { token: issued.token })).json() as any;
  t.equal(first.active, true, `active before exp (and now cached): ${JSON.stringify(first)}`);
  await waitFor(() => Date.now() >= exp * 1000, 10_000, 20);
  const after = await (await postForm(`${srv.url}/introspect`, b.clients.resource_server, { token: issued.token })).json() as any;
  t.equal(after.active, false, 'inactive at exp, well inside the 5 s tolerance');
});
