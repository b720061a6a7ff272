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
  const introspect = async (token: string) => (await (await postForm(`${srv.url}/introspect`, c, { token })).json()) as any;
  // The flake seen under load was a timing assumption: exp is floor(now) + ttl, so a 3 s token lives
  // 2-3 s, and a cold first introspection (client secret check and signature in the crypto pool)
  // could take longer than that, so "active before exp" failed. Warm the path first, and judge the
  // first answer only when it came back before exp (otherwise it says nothing: try a new token).
  await introspect('warm-up');
  let token = '';
  let exp = 0;
  for (let attempt = 0; attempt < 5; attempt++) {
    const issued = await srv.deps.tokens.accessTokens.issue({ tenant: b.tenant_id, sub: c.client_id, clientId: c.client_id, aud: c.audience, scope: 'read', ttlSeconds: 4 });
    const e = JSON.parse(Buffer.from(issued.token.split('.')[1]!, 'base64url').toString()).exp as number;
    const first = await introspect(issued.token);
    if (first.active === true) { token = issued.token; exp = e; break; }
    t.ok(Date.now() >= e * 1000, `inactive only if the answer came after exp: ${JSON.stringify(first)}`);
  }
  t.ok(token, 'an active (and now cached) answer before exp');
  await waitFor(() => Date.now() >= exp * 1000, 10_000, 20);
  const after = await introspect(token);
  t.equal(after.active, false, 'inactive at exp, well inside the 5 s tolerance');
});
