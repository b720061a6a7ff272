import t from 'tap';
import { randomBytes } from 'node:crypto';
import { newId } from '../../src/store/ids.js';
import { findRegistrationForManagement, findInitialAccessToken } from '../../src/cross-tenant/credentials.js';
import type { TenantStore } from '../../src/store/index.js';
import { DEFAULT_POLICY } from '../../src/registration/policy.js';
import { twoTenants } from '../helpers/two-tenants.js';

// In the manner of Hydra's persister_nid_test: tenant A's registration policy, initial access tokens,
// trusted software statement issuers and client registrations (RFC 7591/7592) can be neither read,
// listed, spent, changed nor deleted through tenant B's repository, and A's rows are exactly as they
// were afterwards. Real Postgres (the migrated test database).
const { sql, store, tenantA, tenantB, A, B } = await twoTenants('reg');

const clientId = newId('c');
await A.clients.insert({ clientId, name: 'A registered', secretHash: randomBytes(32), grantTypes: ['authorization_code'], redirectUris: ['https://a.example/cb'], registeredDynamically: true });
await A.registrations.savePolicy({ ...DEFAULT_POLICY, open_registration: true, max_clients: 7 });
const tokenId = newId('iat');
await A.registrations.insertToken({ id: tokenId, hash: randomBytes(32), description: 'A token', expiresAt: null, maxUses: 5, createdBy: 'a-admin' });
const issuer = (await A.registrations.insertIssuer({ id: newId('ssi'), issuer: 'https://software.a.example', jwks: { keys: [{ kty: 'EC' }] }, description: null }))!;
if (!(await A.registrations.insertRegistration({ clientId, tokenHash: randomBytes(32), metadata: { software_id: 'a-app' }, initialAccessTokenId: tokenId, issuer: null }))) throw new Error('registration not recorded');

/** Everything of A's registration data, read through A's own repository and the global lookups. */
async function snapshotOfA(s: TenantStore) {
  return {
    policy: await s.registrations.policy(),
    token: await s.registrations.getToken(tokenId),
    tokens: await s.registrations.listTokens({ limit: 100 }),
    issuers: await s.registrations.listIssuers(),
    issuer: await s.registrations.getIssuer(issuer.id),
    byIss: await s.registrations.issuer('https://software.a.example'),
    registration: await s.registrations.registration(clientId),
    count: await s.registrations.countRegistered(),
    global: await findRegistrationForManagement(sql, clientId),
    globalToken: await findInitialAccessToken(sql, tokenId),
  };
}
const before = await snapshotOfA(A);

t.test('A reads its own rows', async (t) => {
  t.match(before.policy, { tenant_id: tenantA, open_registration: true, max_clients: 7 });
  t.match(before.token, { id: tokenId, uses: 0 });
  t.same(before.tokens.map((x) => x.id), [tokenId]);
  t.same(before.issuers.map((x) => x.id), [issuer.id]);
  t.equal(before.byIss?.id, issuer.id);
  t.match(before.registration, { client_id: clientId, tenant_id: tenantA, metadata: { software_id: 'a-app' } });
  t.equal(before.count, 1);
  t.equal(before.global?.tenant_id, tenantA, 'the management lookup names the owning tenant');
  t.equal(before.globalToken?.tenant_id, tenantA, 'the token lookup names the owning tenant');
});

t.test("B cannot read or list A's registration data", async (t) => {
  t.equal(await B.registrations.policy(), null);
  t.equal(await B.registrations.getToken(tokenId), null);
  t.same(await B.registrations.listTokens({ limit: 100 }), []);
  t.same(await B.registrations.listIssuers(), []);
  t.equal(await B.registrations.getIssuer(issuer.id), null);
  t.equal(await B.registrations.issuer('https://software.a.example'), null, "A's trusted issuer is not B's");
  t.equal(await B.registrations.registration(clientId), null);
  t.equal(await B.registrations.countRegistered(), 0);
});

t.test("B cannot spend, revoke, change or delete A's registration data", async (t) => {
  t.equal(await B.registrations.spendToken(tokenId), false, "B cannot spend A's initial access token");
  t.equal(await B.registrations.revokeToken(tokenId), null);
  t.equal(await B.registrations.deleteIssuer(issuer.id), null);
  t.equal(await B.registrations.updateRegistration(clientId, randomBytes(32), { software_id: 'pwned' }, null), false);
  t.equal(await B.registrations.insertRegistration({ clientId, tokenHash: randomBytes(32), metadata: {}, initialAccessTokenId: null, issuer: null }), false, "B cannot register A's client as its own");
  // B's own policy is B's row only.
  await B.registrations.savePolicy({ ...DEFAULT_POLICY, open_registration: false, max_clients: 1 });
  t.match(await B.registrations.policy(), { max_clients: 1 });
  t.ok(await B.registrations.insertIssuer({ id: newId('ssi'), issuer: 'https://software.a.example', jwks: { keys: [] }, description: 'same iss, own tenant' }), 'the same issuer may be trusted by B separately');
});

t.test("B's registration lock is B's: it does not wait for A's", async (t) => {
  await store.transaction(tenantA, async (a) => {
    await a.registrations.lockForRegistration();
    await store.transaction(tenantB, async (b) => { await b.registrations.lockForRegistration(); });
    t.pass('B took its lock while A held its own');
  });
});

t.test("A's rows are unchanged", async (t) => {
  t.same(await snapshotOfA(A), before);
});
