import t from 'tap';
import { j } from '../helpers/http.js';
import { tamperSignature } from '../helpers/jwt.js';
import { startTestServer } from '../helpers/server.js';
import { postForm, setupTenant } from '../helpers/tokens.js';

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const AT = 'urn:ietf:params:oauth:token-type:access_token';

// The same answers whichever way crypto is placed: inline, signing in the pool, or both in the pool.
for (const [threads, verify] of [['0', 'inline'], ['2', 'inline'], ['2', 'pool']] as const) {
  t.test(`CRYPTO_THREADS=${threads} CRYPTO_VERIFY=${verify}`, async (t) => {
    const srv = await startTestServer({ CRYPTO_THREADS: threads, CRYPTO_VERIFY: verify });
    t.teardown(() => srv.close());
    const b = await setupTenant(srv, `crypto-${threads}-${verify}`);
    // Many at once, so the pool batches them.
    const issued = await Promise.all(Array.from({ length: 50 }, () => postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' }).then(j)));
    t.ok(issued.every((x) => typeof x.access_token === 'string'), '50 concurrent issuances');
    const expired = (await srv.deps.tokens.accessTokens.issue({ tenant: b.tenant_id, sub: 's', clientId: b.clients.exchanger.client_id, aud: 'a', scope: 'read', ttlSeconds: -60 })).token;
    const cases: Array<[string, string, number, string | undefined]> = [
      ['valid', issued[0].access_token, 200, undefined],
      ['bad signature', tamperSignature(issued[1].access_token), 400, 'The subject token has an invalid signature.'],
      ['expired', expired, 400, 'The subject token has expired.'],
      ['expired with a bad signature', tamperSignature(expired), 400, 'The subject token has an invalid signature.'],
    ];
    const answers = await Promise.all(cases.map(([, tok]) => postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: EXCHANGE, subject_token: tok, subject_token_type: AT })));
    for (let i = 0; i < cases.length; i++) {
      const [name, , status, description] = cases[i]!;
      t.equal(answers[i]!.status, status, name);
      const body = await j(answers[i]!);
      if (description) t.equal(body.error_description, description, name);
    }
    const introspected = await Promise.all(issued.slice(0, 20).map((x) => postForm(`${srv.url}/introspect`, b.clients.resource_server, { token: x.access_token }).then(j)));
    t.ok(introspected.every((x) => x.active === true), 'concurrent introspections all active');
  });
}
