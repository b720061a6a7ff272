import t from 'tap';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { findClientForAuthentication } from '../../src/cross-tenant/credentials.js';
import { newId } from '../../src/store/ids.js';
import type { TenantStore } from '../../src/store/index.js';
import { twoTenants } from '../helpers/two-tenants.js';

// In the manner of Hydra's persister_nid_test: rows written through tenant A's client and principal
// repositories can be neither read, listed, updated nor deleted through tenant B's, and A's rows are
// exactly as they were afterwards. Real Postgres (the migrated test database).
const { sql, store, tenantA, tenantB, A, B } = await twoTenants('two');
const publicJwk = () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' }) as Record<string, unknown>;
const credential = (kid: string) => ({ id: newId('mpc'), kid, publicJwk: publicJwk(), alg: 'ES256', displayName: kid, description: null, notBefore: null, expiresAt: null });

// Tenant A: a plain client with a live refresh token, and a principal with its backing client and a credential.
const clientId = newId('c');
await A.clients.insert({ clientId, name: 'A client', secretHash: randomBytes(32), grantTypes: ['client_credentials'], scopes: ['read'], permissions: ['docs:read'] });
const refreshId = randomBytes(16).toString('hex');
await sql`insert into refresh_tokens (id, tenant_id, client_id, sub, family_id, generation, shard, status, expires_at)
  values (${refreshId}, ${tenantA}, ${clientId}, 'user-1', ${newId('fam')}, 1, 0, 'active', ${Date.now() + 3_600_000})`;
const principalId = newId('mp');
const principalClientId = `mpc_${principalId.slice(3)}`;
await A.clients.insert({ clientId: principalClientId, name: 'A bot', secretHash: null, authMethod: 'private_key_jwt', grantTypes: ['client_credentials'], jwks: { keys: [] } });
const principal = await A.principals.insert({
  id: principalId, clientId: principalClientId, displayName: 'A bot', description: null, principalType: 'ci', tokenTtlSeconds: 300,
  permissions: ['admin:users:read'], tenantScopes: [{ scope_mode: 'none', tenant_id: null }],
});
const cred = (await A.principals.insertCredential(principalId, credential('a-key')))!;

/** Everything of A's, read through A's own repositories and the global authentication lookup. */
async function snapshotOfA(s: TenantStore) {
  return {
    client: await s.clients.get(clientId),
    principalClient: await s.clients.get(principalClientId),
    auth: await findClientForAuthentication(sql, clientId),
    clients: await s.clients.list({ limit: 100 }),
    principal: await s.principals.get(principalId),
    principals: await s.principals.list({ page: 1, limit: 100 }),
    credentials: await s.principals.credentialsOf([principalId]),
    ownedByPrincipal: await s.clients.ownedByPrincipal(principalClientId),
    refresh: (await sql<{ status: string }[]>`select status from refresh_tokens where id = ${refreshId}`)[0]?.status,
  };
}
const before = await snapshotOfA(A);

t.test("A reads its own rows", async (t) => {
  t.equal(before.client?.client_id, clientId);
  t.equal(before.principalClient?.client_id, principalClientId);
  t.same(before.clients.map((c) => c.client_id), [clientId], "A's list holds its plain client, not the principal's");
  t.equal(before.principal?.client_id, principalClientId);
  t.equal(before.principals.total, 1);
  t.same(before.credentials.map((c) => c.id), [cred.id]);
  t.equal(before.ownedByPrincipal, true);
  t.equal(before.refresh, 'active');
});

t.test("B cannot read or list A's clients", async (t) => {
  t.equal(await B.clients.get(clientId), null);
  t.equal(await B.clients.get(principalClientId), null);
  t.same(await B.clients.list({ limit: 100 }), []);
  t.same(await B.clients.list({ limit: 100, status: 'active' }), []);
  t.equal(await B.clients.ownedByPrincipal(principalClientId), false);
  await store.transaction(tenantB, async (s) => { t.equal(await s.clients.get(clientId, true), null, 'nor lock one'); });
});

t.test("B cannot change or delete A's clients", async (t) => {
  t.equal(await B.clients.update(clientId, { name: 'pwned', status: 'disabled', permissions: ['admin:*'] }), null);
  t.equal(await B.clients.setSecretHash(clientId, randomBytes(32)), false);
  t.equal(await B.clients.revokeRefreshTokens(clientId), 0);
  t.equal(await B.clients.delete(clientId), null);
  t.equal(await B.clients.delete(principalClientId), null);
  t.equal(await B.clients.insert({ clientId, name: 'squatter', secretHash: null, grantTypes: [] }), null, "client ids are global: B cannot take A's");
});

t.test("B cannot read or list A's principals and credentials", async (t) => {
  t.equal(await B.principals.get(principalId), null);
  t.same(await B.principals.list({ page: 1, limit: 100 }), { rows: [], total: 0 });
  t.same(await B.principals.list({ page: 1, limit: 100, principal_type: 'ci', status: 'active' }), { rows: [], total: 0 });
  t.same(await B.principals.credentialsOf([principalId]), []);
  t.equal(await B.principals.getCredential(principalId, cred.id), null);
});

t.test("B cannot change A's principals and credentials", async (t) => {
  t.equal(await B.principals.update(principalId, { displayName: 'pwned', status: 'deleted', permissions: ['admin:*'] }), null);
  t.equal(await B.principals.setCredentialState(cred.id, 'revoked'), null);
  await B.principals.revokeAllCredentials(principalId);
  await t.rejects(B.principals.insertCredential(principalId, credential('b-key')), { code: '23503' }, "no credential for A's principal under B");
  // Mirroring a principal onto its client only reaches the client in the repository's own tenant.
  await B.principals.syncClient({ ...principal, display_name: 'pwned', status: 'disabled', permissions: ['admin:*'] }, { keys: [] });
});

t.test("B's rows stay B's: A does not see them either", async (t) => {
  const bClientId = newId('c');
  t.ok(await B.clients.insert({ clientId: bClientId, name: 'B client', secretHash: null, grantTypes: [] }));
  const bPrincipalId = newId('mp');
  await B.clients.insert({ clientId: `mpc_${bPrincipalId.slice(3)}`, name: 'B bot', secretHash: null, authMethod: 'private_key_jwt', grantTypes: [] });
  await B.principals.insert({ id: bPrincipalId, clientId: `mpc_${bPrincipalId.slice(3)}`, displayName: 'B bot', description: null, principalType: 'ci', tokenTtlSeconds: 60, permissions: [], tenantScopes: [] });
  t.equal(await A.clients.get(bClientId), null);
  t.equal(await A.principals.get(bPrincipalId), null);
  t.same((await B.clients.list({ limit: 100 })).map((c) => c.client_id), [bClientId]);
  t.equal((await B.principals.list({ page: 1, limit: 100 })).total, 1);
});

t.test("A's rows are unchanged", async (t) => {
  const after = await snapshotOfA(A);
  t.same(after, before);
  t.equal(after.auth?.tenantId, tenantA, 'the global authentication lookup names the owning tenant');
});
