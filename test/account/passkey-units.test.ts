import t from 'tap';
import { normalizeAaguid, providerOf } from '../../src/account/passkeys/providers.js';
import { normalizeDeviceName } from '../../src/account/passkeys/view.js';
import { grantMarkId, RevocationStore } from '../../src/tokens/revocation.js';
import { startTestServer } from '../helpers/server.js';
import { forgetRevocationState } from '../helpers/revocation.js';

t.test('provider table: all-zero or missing AAGUID has no provider; unknown ones are known: false', async (t) => {
  t.equal(providerOf(null), null);
  t.equal(providerOf('00000000-0000-0000-0000-000000000000'), null);
  t.equal(normalizeAaguid('not-an-aaguid'), null);
  t.same(providerOf('01234567-89ab-cdef-0123-456789abcdef'), { aaguid: '01234567-89ab-cdef-0123-456789abcdef', name: null, icon_dark: null, icon_light: null, known: false });
  t.same(providerOf('EA9B8D66-4D01-1D21-3CE4-B6B48CB575D4'), { aaguid: 'ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4', name: 'Google Password Manager', icon_dark: null, icon_light: null, known: true });
});

t.test('device names: trimmed, inner whitespace collapsed, 1 to 100 characters', async (t) => {
  t.equal(normalizeDeviceName('  Work \t\n laptop  '), 'Work laptop');
  t.equal(normalizeDeviceName('   '), null);
  t.equal(normalizeDeviceName(''), null);
  t.equal(normalizeDeviceName('x'.repeat(100)), 'x'.repeat(100));
  t.equal(normalizeDeviceName('x'.repeat(101)), null);
  t.equal(normalizeDeviceName('🔑'.repeat(100)), '🔑'.repeat(100), 'characters, not UTF-16 units');
});

t.test('a grant mark cuts one user at one client, and survives a Redis that lost it', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.close());
  const rv = srv.deps.tokens.revocations;
  const tenant = `grant-${Date.now()}`;
  const iat = Math.floor(Date.now() / 1000) - 5;
  await rv.revokeBefore(tenant, 'grant', grantMarkId('u1', 'c1'), Date.now(), 60);
  const check = (sub: string, client: string) => rv.isRevoked({ jti: 'g1:local:0:abcdefgh1234', tenant, sub, client_id: client, iat });
  t.equal(await check('u1', 'c1'), true);
  t.equal(await check('u1', 'c2'), false, 'the user at another client is untouched');
  t.equal(await check('u2', 'c1'), false, 'another user at the client is untouched');
  t.equal(await rv.isRevoked({ jti: 'g1:local:0:abcdefgh1234', tenant, sub: 'u1', client_id: 'c1', iat: iat + 3600 }), false, 'later tokens are not cut');
  // Redis forgets (no sentinel, no mark): the refill from Postgres brings the grant mark back.
  // Two commands: the keys live in different slots of a Redis Cluster.
  await srv.deps.redis.del(RevocationStore.markKey(tenant, 'grant', grantMarkId('u1', 'c1')));
  await forgetRevocationState(srv.deps.redis);
  await rv.ensureLoaded();
  t.equal(await check('u1', 'c1'), true, 'still cut after the refill');
  await srv.deps.sql`delete from revocation_marks where tenant_id = ${tenant}`;
});
