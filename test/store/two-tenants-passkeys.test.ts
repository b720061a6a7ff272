import t from 'tap';
import { recordEvent } from '../../src/events/outbox.js';
import { newId } from '../../src/store/ids.js';
import { storeRefreshToken } from '../../src/tokens/refresh-tokens.js';
import { twoTenants } from '../helpers/two-tenants.js';

// In the manner of Hydra's persister_nid_test: passkeys, account activity, consent deletion and the
// per-grant refresh token revocation through tenant B never see or touch tenant A's rows, even when B
// names A's user, passkey id, credential id, consent id or client; A's rows are unchanged afterwards.
const { sql, tenantA, tenantB, A, B } = await twoTenants('pk');
const userA = newId('u');
const userB = newId('u');
const client = newId('c');
await sql`insert into users (id, tenant_id) values (${userA}, ${tenantA}), (${userB}, ${tenantB})`;
await sql`insert into clients (client_id, tenant_id, name) values (${client}, ${tenantA}, 'A client')`;

const credentialId = `cred-${newId('x')}`;
const pk = (await A.passkeys.insert({ userId: userA, credentialId, publicKey: new Uint8Array([1, 2, 3]), counter: 5, transports: ['internal'], backupEligible: true, backedUp: false, aaguid: null, deviceName: 'Laptop' }))!;
await sql.begin((tx) => recordEvent(tx, { tenantId: tenantA, event: 'auth.login', data: { user_id: userA, method: 'passkey' } }));
await A.consents.upsert({ userId: userA, clientId: client, scopes: ['openid'], policy: { privacyPolicyVersion: 'p', tosVersion: 't', consentVersion: 1 } });
const [consentA] = await A.consents.listForUser(userA);
await storeRefreshToken(sql, { tenantId: tenantA, clientId: client, sub: userA, scope: 'openid', accessJti: 'jti-pk-a', authTime: null, ttlSeconds: 3600, generation: { generation: 1, shardCount: 16 } });

async function snapshotOfA() {
  return {
    passkeys: await A.passkeys.listForUser(userA), activity: await A.accountActivity.recentForUser(userA),
    consents: await A.consents.listForUser(userA),
    refresh: await sql`select id, status from refresh_tokens where tenant_id = ${tenantA} order by id`,
  };
}
const before = await snapshotOfA();

t.test('tenant B cannot read, list, rename, delete or use A\'s passkey', async (t) => {
  t.equal(await B.passkeys.getForUser(userA, pk.id), null);
  t.same(await B.passkeys.listForUser(userA), []);
  t.equal(await B.passkeys.countForUser(userA), 0);
  t.equal(await B.passkeys.findByCredentialId(credentialId), null);
  t.equal(await B.passkeys.rename(userA, pk.id, 'mine now'), null);
  t.equal(await B.passkeys.delete(userA, pk.id), false);
  t.equal(await B.passkeys.recordUse(pk.id, 5, 6, true), false);
  // The same credential id registered in B is B's own row, not a conflict with A's.
  const own = await B.passkeys.insert({ userId: userB, credentialId, publicKey: new Uint8Array([9]), counter: 0, transports: [], backupEligible: false, backedUp: false, aaguid: null, deviceName: null });
  t.ok(own, 'B registers its own credential with the same id');
  t.equal((await B.passkeys.findByCredentialId(credentialId))?.user_id, userB);
  // Within A, another user cannot reach the passkey either.
  t.equal(await A.passkeys.getForUser(userB, pk.id), null);
  t.equal(await A.passkeys.rename(userB, pk.id, 'x'), null);
});

t.test('tenant B sees none of A\'s activity and cannot withdraw A\'s consent or tokens', async (t) => {
  t.same(await B.accountActivity.recentForUser(userA), []);
  t.equal(await B.consents.deleteForUser(userA, consentA!.id), null);
  t.same(await B.refreshTokens.revokeForGrant(userA, client), []);
});

t.test('A\'s rows are unchanged, and A itself can do what B could not', async (t) => {
  t.same(await snapshotOfA(), before);
  t.equal(before.activity[0]?.event, 'auth.login');
  t.equal((await A.passkeys.rename(userA, pk.id, 'Work laptop'))?.device_name, 'Work laptop');
  t.equal(await A.passkeys.recordUse(pk.id, 5, 6, true), true);
  t.equal(await A.passkeys.recordUse(pk.id, 5, 7, true), false, 'a stale counter read loses');
  t.same(await A.refreshTokens.revokeForGrant(userA, client), ['jti-pk-a']);
  t.same(await A.consents.deleteForUser(userA, consentA!.id), { clientId: client });
  t.equal(await A.passkeys.delete(userA, pk.id), true);
});
