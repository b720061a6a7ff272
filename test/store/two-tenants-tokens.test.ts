import t from 'tap';
import { newId } from '../../src/store/ids.js';
import type { TenantStore } from '../../src/store/index.js';
import { consumeRefreshToken, findRefreshToken, revokeFamily, storeRefreshToken } from '../../src/tokens/refresh-tokens.js';
import { sha256b64url } from '../../src/tokens/secrets.js';
import { twoTenants } from '../helpers/two-tenants.js';

// In the manner of Hydra's persister_nid_test: consents and refresh tokens written through tenant A's
// repositories can be neither read, listed, changed nor revoked through tenant B's, even when B names
// the same user, client or refresh token family; A's rows are exactly as they were afterwards.
// Real Postgres (the migrated test database).
const { sql, tenantA, tenantB, A, B } = await twoTenants('tok');

const policy = { privacyPolicyVersion: 'p1', tosVersion: 't1', consentVersion: 1 };
const generation = { generation: 1, shardCount: 16 };

// Tenant A: a user, a client, the user's consent to it, and a refresh token family of two (one rotated, one active).
const userA = newId('u');
const clientA = newId('c');
const clientB = newId('c');
await sql`insert into users (id, tenant_id) values (${userA}, ${tenantA})`;
await sql`insert into clients (client_id, tenant_id, name) values (${clientA}, ${tenantA}, 'A client'), (${clientB}, ${tenantB}, 'B client')`;
await A.consents.upsert({ userId: userA, clientId: clientA, scopes: ['openid', 'read'], policy });
const firstA = await storeRefreshToken(sql, { tenantId: tenantA, clientId: clientA, sub: userA, scope: 'read', accessJti: 'jti-a1', authTime: null, ttlSeconds: 3600, generation });
const familyA = sha256b64url(firstA);
const rotated = await consumeRefreshToken(sql, firstA, { tenantId: tenantA, clientId: clientA });
if (rotated.kind !== 'rotated') throw new Error('setup: A could not rotate its first refresh token');
const tokenA = await storeRefreshToken(sql, { tenantId: tenantA, clientId: clientA, sub: userA, scope: 'read', familyId: familyA, accessJti: 'jti-a2', authTime: null, ttlSeconds: 3600, generation });
const idA = sha256b64url(tokenA);

/** Everything of A's, read through A's own repositories and straight from the tables. */
async function snapshotOfA(s: TenantStore) {
  return {
    consent: await s.consents.find(userA, clientA),
    consents: await s.consents.listForUser(userA),
    token: await s.refreshTokens.get(idA),
    rows: await sql`select id, status, family_id, access_jti, used_at from refresh_tokens where tenant_id = ${tenantA} order by id`,
    consentRows: await sql`select * from consents where tenant_id = ${tenantA} order by id`,
  };
}
const before = await snapshotOfA(A);

t.test('A reads its own rows', async (t) => {
  t.same(before.consent?.scopes, ['openid', 'read']);
  t.equal(before.consents.length, 1);
  t.equal(before.consents[0]!.client_name, 'A client', "the client's name comes from A's own client");
  t.equal(before.token?.status, 'active');
  t.equal(before.token?.family_id, familyA);
  t.equal(before.rows.length, 2);
});

t.test("consents: B cannot read A's, and B's own consent to the same user and client is a row of B's", async (t) => {
  t.equal(await B.consents.find(userA, clientA), null, 'find');
  t.same(await B.consents.listForUser(userA), [], 'list');
  // B names A's user and A's client (the foreign keys allow it); the upsert writes B's row, never widens A's.
  t.same(await B.consents.upsert({ userId: userA, clientId: clientA, scopes: ['write'], policy }), ['write']);
  const listed = await B.consents.listForUser(userA);
  t.equal(listed.length, 1);
  t.equal(listed[0]!.tenant_id, tenantB);
  t.equal(listed[0]!.client_name ?? null, null, "B's listing does not join A's client (the join carries the tenant)");
  t.same((await A.consents.find(userA, clientA))?.scopes, ['openid', 'read'], "A's consent is not widened");
});

t.test("refresh tokens: B cannot read, consume or rotate A's", async (t) => {
  t.equal(await B.refreshTokens.get(idA), null, 'get');
  t.equal(await findRefreshToken(sql, tenantB, tokenA), null, 'find by token');
  t.same(await consumeRefreshToken(sql, tokenA, { tenantId: tenantB, clientId: clientA }), { kind: 'invalid' }, 'consume');
  await B.refreshTokens.markRotated(idA);
  t.equal((await A.refreshTokens.get(idA))?.status, 'active', 'still active for A');
});

t.test("family revoke: B's revoke of the same family id touches B's family only", async (t) => {
  t.same(await B.refreshTokens.revokeFamily(familyA), [], 'B has no such family');
  t.same(await revokeFamily(sql, tenantB, familyA), [], 'nor through the function the grants use');
  // B gets a family with the same id (ids are hashes of the first token, so this is constructed, not found).
  await storeRefreshToken(sql, { tenantId: tenantB, clientId: clientB, sub: 'user-b', scope: 'read', familyId: familyA, accessJti: 'jti-b', authTime: null, ttlSeconds: 3600, generation });
  t.same(await B.refreshTokens.revokeFamily(familyA), ['jti-b'], "B revokes its own family and learns only its own access token ids");
  const rowsA = await sql<{ status: string }[]>`select status from refresh_tokens where tenant_id = ${tenantA} order by id`;
  t.same(rowsA.map((r) => r.status).sort(), ['active', 'rotated'], "A's family is untouched");
});

t.test("a replay in B's family revokes B's family only", async (t) => {
  const first = await storeRefreshToken(sql, { tenantId: tenantB, clientId: clientB, sub: 'user-b', scope: 'read', familyId: familyA, accessJti: 'jti-b2', authTime: null, ttlSeconds: 3600, generation });
  t.equal((await consumeRefreshToken(sql, first, { tenantId: tenantB, clientId: clientB })).kind, 'rotated');
  const replay = await consumeRefreshToken(sql, first, { tenantId: tenantB, clientId: clientB });
  t.equal(replay.kind, 'reused');
  if (replay.kind === 'reused') t.same(replay.accessJtis.sort(), ['jti-b', 'jti-b2'], "only B's access token ids");
  t.equal((await A.refreshTokens.get(idA))?.status, 'active', "A's live token survives B's family revoke");
});

t.test("A's rows are exactly as they were", async (t) => {
  t.same(await snapshotOfA(A), before);
});

t.test('A can still use and revoke its own family', async (t) => {
  t.same((await A.refreshTokens.revokeFamily(familyA)).sort(), ['jti-a1', 'jti-a2']);
  t.equal((await A.refreshTokens.get(idA))?.status, 'revoked');
});
