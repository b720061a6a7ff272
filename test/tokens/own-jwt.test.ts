import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { JwtError } from '../../src/tokens/jwt.js';
import type { VerifyKey } from '../../src/tokens/keys.js';
import { verifyOwnJwt } from '../../src/tokens/own-jwt.js';
import { mintJwt } from '../helpers/jwt.js';

// verifyOwnJwt: our tokens off the hot path (logout's id_token_hint) verified by jose under the policy of
// verifyJwt, with the same JwtError reasons.
const ISSUER = 'https://issuer.test';
const rs = generateKeyPairSync('rsa', { modulusLength: 2048 });
const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
const key: VerifyKey = { kid: 'k1', alg: 'RS256', publicKey: rs.publicKey, tenant: null };
const ring = { verifyKeyFor: (kid: string) => (kid === 'k1' ? key : undefined) };
const now = Math.floor(Date.now() / 1000);
const good = { iss: ISSUER, sub: 'u', aud: 'c', iat: now, exp: now + 300 };
const opts = { typ: 'JWT', issuer: ISSUER };

async function reason(token: Promise<string> | string, o: Partial<typeof opts> & { clockTolerance?: number } = {}): Promise<string> {
  try { await verifyOwnJwt(ring, await token, { ...opts, ...o }); return 'ok'; } catch (err) { return err instanceof JwtError ? err.reason : `threw ${String(err)}`; }
}

t.test('accepts our token and refuses the rest with the verifyJwt reasons', async (t) => {
  t.equal(await reason(mintJwt(rs.privateKey, { alg: 'RS256', kid: 'k1', typ: 'JWT' }, good)), 'ok');
  t.equal(await reason(mintJwt(rs.privateKey, { alg: 'RS256', kid: 'k1', typ: 'application/jwt' }, good)), 'ok', 'typ per RFC 7515 4.1.9');
  t.equal(await reason(mintJwt(rs.privateKey, { alg: 'RS256', kid: 'k1', typ: 'at+jwt' }, good)), 'type');
  t.equal(await reason(mintJwt(rs.privateKey, { alg: 'RS256', kid: 'nope', typ: 'JWT' }, good)), 'unknown_key');
  t.equal(await reason(mintJwt(rs.privateKey, { alg: 'PS256', kid: 'k1', typ: 'JWT' }, good)), 'algorithm');
  t.equal(await reason(mintJwt(other.privateKey, { alg: 'RS256', kid: 'k1', typ: 'JWT' }, good)), 'signature');
  t.equal(await reason(mintJwt(rs.privateKey, { alg: 'RS256', kid: 'k1', typ: 'JWT' }, { ...good, iss: 'https://x' })), 'issuer');
  t.equal(await reason(mintJwt(rs.privateKey, { alg: 'RS256', kid: 'k1', typ: 'JWT' }, { ...good, iat: now - 600, exp: now - 60 })), 'expired');
  t.equal(await reason(mintJwt(rs.privateKey, { alg: 'RS256', kid: 'k1', typ: 'JWT' }, { ...good, iat: now - 600, exp: now - 60 }), { clockTolerance: 3600 }), 'ok', 'an expired hint within the tolerance');
  t.equal(await reason(mintJwt(rs.privateKey, { alg: 'RS256', kid: 'k1', typ: 'JWT' }, { ...good, nbf: now + 600 })), 'not_yet_valid');
  t.equal(await reason(mintJwt(rs.privateKey, { alg: 'RS256', kid: 'k1', typ: 'JWT' }, { ...good, iat: undefined })), 'malformed', 'iat required');
  t.equal(await reason(mintJwt(rs.privateKey, { alg: 'RS256', kid: 'k1', typ: 'JWT', crit: ['b64'], b64: true }, good)), 'crit');
  t.equal(await reason('a.b'), 'malformed');
  t.equal(await reason(`${Buffer.from('{"alg":"none","kid":"k1","typ":"JWT"}').toString('base64url')}.${Buffer.from(JSON.stringify(good)).toString('base64url')}.`), 'algorithm');
});
