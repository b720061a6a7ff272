import t from 'tap';
import { j } from '../helpers/http.js';
import { authorizeUrl, codeFor, sessionCookieFrom, startLoginEnv, uniqueEmail } from '../login/fixtures.js';

// Discovery says what /authorize does: a client that reads prompt_values_supported and sends any of those
// values gets the flow, not an error; a value it does not list is refused. Clients that take the first
// listed authentication method (mod_auth_openidc) get HTTP Basic, the spec's method.
const env = await startLoginEnv();
t.teardown(() => env.close());
const { srv, sink, tenant } = env;
const web = tenant.clients.web;
const redirectUri = web.redirect_uris[0]!;
// Every prompt value OpenID Connect Core 3.1.2.1 defines, and one from a later specification (Initiating User Registration).
type Subtest = Parameters<Parameters<typeof t.test>[0]>[0];
const KNOWN_PROMPTS = ['none', 'login', 'consent', 'select_account', 'create'];

async function signedIn(): Promise<string> {
  const email = uniqueEmail('disco');
  await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, client_id: web.client_id }) });
  const res = await fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, code: await codeFor(sink, email) }) });
  return sessionCookieFrom(res)!;
}

/** The error /authorize sends back to the redirect URI for a prompt value, or null when it goes on with the flow. */
async function promptError(t: Subtest, prompt: string, cookie: string): Promise<string | null> {
  const res = await fetch(authorizeUrl(srv.url, { response_type: 'code', client_id: web.client_id, redirect_uri: redirectUri, scope: 'openid email', state: 's', prompt }), { headers: { cookie }, redirect: 'manual' });
  if (res.status !== 302) { t.equal(res.status, 200, `prompt=${prompt} shows a page`); return null; }
  const loc = new URL(res.headers.get('location')!);
  return loc.searchParams.get('error');
}

t.test('prompt_values_supported lists exactly the prompt values /authorize accepts', async (t) => {
  const meta = await j(await fetch(`${srv.url}/.well-known/openid-configuration`));
  const advertised: string[] = meta.prompt_values_supported;
  t.ok(Array.isArray(advertised) && advertised.length > 0);
  const cookie = await signedIn();
  for (const p of advertised) t.equal(await promptError(t, p, cookie), null, `advertised prompt=${p} is served`);
  for (const p of KNOWN_PROMPTS.filter((x) => !advertised.includes(x))) t.equal(await promptError(t, p, cookie), 'invalid_request', `unadvertised prompt=${p} is refused`);
  t.same(advertised.filter((p) => KNOWN_PROMPTS.includes(p)), advertised, 'nothing advertised beyond the known values');
  t.ok(advertised.includes('consent') && advertised.includes('select_account'), 'consent and select_account, which /authorize serves, are advertised');
});

t.test('authentication methods: HTTP Basic first wherever a client authenticates', async (t) => {
  const meta = await j(await fetch(`${srv.url}/.well-known/oauth-authorization-server`));
  for (const k of ['token_endpoint_auth_methods_supported', 'introspection_endpoint_auth_methods_supported', 'revocation_endpoint_auth_methods_supported']) {
    t.equal(meta[k][0], 'client_secret_basic', `${k} starts with client_secret_basic`);
    t.ok(meta[k].includes('private_key_jwt'), `${k} offers private_key_jwt`);
  }
  t.equal(meta.token_endpoint_auth_methods_supported.at(-1), 'none', 'public clients last');
});
