import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { rotateKeys } from '../../src/tokens/keys.js';
import { j } from '../helpers/http.js';
import { claims, header, mintJwt } from '../helpers/jwt.js';
import { startTestServer } from '../helpers/server.js';
import { postForm, setupTenant } from '../helpers/tokens.js';
import { tempDatabase } from '../helpers/db.js';
import { migrate } from '../../src/store/migrate.js';

t.test('rotation: the next key is published before it signs, and old tokens keep verifying', async (t) => {
  // Rotation changes the server-wide key set, so this test has a database of its own.
  const db = await tempDatabase();
  t.teardown(db.drop);
  await migrate(db.sql);
  const srv = await startTestServer({ DATABASE_URL: db.url });
  t.teardown(() => srv.close());
  const b = await setupTenant(srv, 'keys');
  const jwks1 = await j(await fetch(`${srv.url}/.well-known/jwks.json`));
  t.equal(jwks1.keys.length, 2, 'active and next key are published');
  for (const k of jwks1.keys) {
    t.notOk(k.d || k.p || k.q || k.dp || k.dq || k.qi, 'no private key material in the JWKS');
    t.equal(k.use, 'sig');
  }
  const old = (await j(await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' }))).access_token;
  const oldKid = header(old).kid;
  const r = await rotateKeys(srv.deps.sql, srv.config.keyEncryptionKey, srv.config.tokenSigningAlg, 86_400);
  t.ok(jwks1.keys.some((k: { kid: string }) => k.kid === r.active), 'the newly active key was already published');
  t.equal(r.retired, oldKid);
  await srv.deps.tokens.keys.load();
  const fresh = (await j(await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' }))).access_token;
  t.equal(header(fresh).kid, r.active, 'new tokens use the new key');
  const jwks2 = await j(await fetch(`${srv.url}/.well-known/jwks.json`));
  t.same(jwks2.keys.map((k: { kid: string }) => k.kid).sort(), [oldKid, r.active, r.next].sort(), 'retired, active and next keys published');
  for (const tok of [old, fresh]) t.equal((await j(await postForm(`${srv.url}/introspect`, b.clients.resource_server, { token: tok }))).active, true);
  // Past its verification window the retired key leaves the ring: the old token's active answer is cached
  // (introspected just above), and the hit is still refused because the ring no longer verifies its kid.
  await srv.deps.sql`update signing_keys set verify_until = ${Date.now() - 1} where kid = ${oldKid}`;
  await srv.deps.tokens.keys.load();
  t.equal(srv.deps.tokens.keys.verifyKey(oldKid), undefined, 'the retired key is out of the ring');
  t.equal((await j(await postForm(`${srv.url}/introspect`, b.clients.resource_server, { token: old }))).active, false, 'a dropped key\'s token is inactive despite its cached answer');
  t.equal((await j(await postForm(`${srv.url}/introspect`, b.clients.resource_server, { token: fresh }))).active, true, 'the current key\'s cached answer still holds');
  const [row] = await srv.deps.sql<{ private_key_enc: Buffer }[]>`select private_key_enc from signing_keys where kid = ${r.active}`;
  t.notMatch(row!.private_key_enc.toString('latin1'), /BEGIN|PRIVATE/, 'private keys are stored encrypted');
});

t.test('RFC 8725: only our keys, pinned algorithms, explicit types', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.close());
  const b = await setupTenant(srv, 'rfc8725');
  const good = (await j(await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' }))).access_token;
  const c = claims(good);
  const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const introspect = async (tok: string) => (await j(await postForm(`${srv.url}/introspect`, b.clients.resource_server, { token: tok }))).active;
  t.equal(await introspect(`${enc({ alg: 'none', typ: 'at+jwt', kid: header(good).kid })}.${enc(c)}.`), false, 'alg none');
  const hs = `${enc({ alg: 'HS256', typ: 'at+jwt', kid: header(good).kid })}.${enc(c)}`;
  t.equal(await introspect(`${hs}.${Buffer.from('x').toString('base64url')}`), false, 'algorithm confusion (HS256 with our kid)');
  // A token signed by an attacker's key that names it in the jwk header.
  const attacker = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const withJwk = await mintJwt(attacker.privateKey, { alg: 'RS256', typ: 'at+jwt', kid: 'attacker', jwk: attacker.publicKey.export({ format: 'jwk' }) as never }, c);
  t.equal(await introspect(withJwk), false, 'embedded jwk is ignored');
  // Our key, but the wrong explicit type: an ID token is not an access token.
  const idLike = await srv.deps.tokens.signer.sign(String(c.tenant), { typ: 'JWT' }, c);
  t.equal(await introspect(idLike), false, 'typ JWT is refused where at+jwt is expected');
  const crit = await srv.deps.tokens.signer.sign(String(c.tenant), { typ: 'at+jwt', crit: ['exp'] }, c);
  t.equal(await introspect(crit), false, 'unknown crit is refused');
  const noExp = { ...c }; delete noExp.exp;
  t.equal(await introspect(await srv.deps.tokens.signer.sign(String(c.tenant), { typ: 'at+jwt' }, noExp)), false, 'exp is required');
  t.equal(await introspect(good), true);
});

t.test('discovery names what is supported', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.close());
  for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
    const m = await j(await fetch(`${srv.url}${path}`));
    t.equal(m.issuer, srv.config.issuer);
    t.equal(m.token_endpoint, `${srv.config.issuer}/token`);
    t.equal(m.introspection_endpoint, `${srv.config.issuer}/introspect`);
    t.equal(m.revocation_endpoint, `${srv.config.issuer}/revoke`);
    t.equal(m.jwks_uri, `${srv.config.issuer}/.well-known/jwks.json`);
    t.ok(m.grant_types_supported.includes('urn:ietf:params:oauth:grant-type:token-exchange'));
    t.ok(m.grant_types_supported.includes('client_credentials'));
    t.notOk(m.grant_types_supported.includes('password'));
    t.notOk(m.grant_types_supported.includes('implicit'));
    t.same(m.token_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'], 'none for public clients of the code flow');
    t.same(m.code_challenge_methods_supported, ['S256']);
  }
});

t.test('TOKEN_SIGNING_ALG=EdDSA: the deployment keys are Ed25519, published under both names', async (t) => {
  // The deployment's algorithm is server-wide, so this test has a database of its own.
  const db = await tempDatabase();
  t.teardown(db.drop);
  await migrate(db.sql);
  const srv = await startTestServer({ DATABASE_URL: db.url, TOKEN_SIGNING_ALG: 'EdDSA' });
  t.teardown(() => srv.close());
  const b = await setupTenant(srv, 'keys-ed');
  const jwks = await j(await fetch(`${srv.url}/.well-known/jwks.json`));
  t.same(jwks.keys.map((k: { alg: string }) => k.alg).sort(), ['Ed25519', 'Ed25519', 'EdDSA', 'EdDSA'], 'active and next key, each under EdDSA and Ed25519');
  t.ok(jwks.keys.every((k: { kty: string; crv: string }) => k.kty === 'OKP' && k.crv === 'Ed25519'));
  const token = (await j(await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' }))).access_token;
  t.equal(header(token).alg, 'EdDSA');
  t.equal((await j(await postForm(`${srv.url}/introspect`, b.clients.resource_server, { token }))).active, true);
  const meta = await j(await fetch(`${srv.url}/.well-known/oauth-authorization-server`));
  t.same(meta.access_token_signing_alg_values_supported, ['EdDSA', 'Ed25519']);
  const r = await rotateKeys(srv.deps.sql, srv.config.keyEncryptionKey, 'EdDSA', 86_400);
  await srv.deps.tokens.keys.load();
  t.equal(header((await j(await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' }))).access_token).kid, r.active, 'rotation works for Ed25519 keys');
  const x = await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token_type: 'urn:ietf:params:oauth:token-type:access_token', subject_token: token });
  t.equal(x.status, 200, 'the token of the retired key still verifies (token exchange checks it afresh)');
});
