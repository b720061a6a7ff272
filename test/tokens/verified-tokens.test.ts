// The verified-signature cache of AccessTokens.verifyAsync (src/tokens/verified-tokens.ts): a token
// verified once is not verified again, but only the identical string under the very key object that
// verified it; claims are still checked on every use. A real Ed25519 key and Node's verifier throughout.
import { generateKeyPairSync, sign } from 'node:crypto';
import t from 'tap';
import type { Config } from '../../src/config.js';
import { AccessTokens } from '../../src/tokens/access-tokens.js';
import { JwtError, verifySignature } from '../../src/tokens/jwt.js';
import type { VerifyKey } from '../../src/tokens/keys.js';
import type { ShardingCache } from '../../src/tokens/sharding.js';
import type { Signer } from '../../src/tokens/signer.js';
import { VerifiedTokens } from '../../src/tokens/verified-tokens.js';

const ISSUER = 'https://issuer.test';
const pair = generateKeyPairSync('ed25519');
let key: VerifyKey = { kid: 'k1', alg: 'EdDSA', publicKey: pair.publicKey, tenant: 't1' };
let verifications = 0;
const ring = { verifyKeyFor: (kid: string, tenant: unknown) => (kid === key.kid && tenant === key.tenant ? key : undefined) };
const signer = { verify: (k: VerifyKey, input: string, sig: Buffer) => { verifications++; return verifySignature(k, input, sig); } } as unknown as Signer;
const tokens = new AccessTokens({ issuer: ISSUER } as Config, ring as never, signer, {} as ShardingCache);

const b64 = (x: unknown) => Buffer.from(typeof x === 'string' ? x : JSON.stringify(x)).toString('base64url');
function mint(claims: Record<string, unknown>): string {
  const input = `${b64({ alg: 'EdDSA', kid: 'k1', typ: 'at+jwt' })}.${b64({ iss: ISSUER, tenant: 't1', sub: 'u1', iat: 1, ...claims })}`;
  return `${input}.${sign(null, Buffer.from(input), pair.privateKey).toString('base64url')}`;
}
const reason = async (p: Promise<unknown>) => { try { await p; return 'ok'; } catch (e) { if (e instanceof JwtError) return e.reason; throw e; } };

t.test('a token is verified once, then served from the cache with its claims checked each time', async (t) => {
  const now = Math.floor(Date.now() / 1000);
  const token = mint({ exp: now + 2 });
  verifications = 0;
  t.equal(await reason(tokens.verifyAsync(token)), 'ok');
  t.equal(await reason(tokens.verifyAsync(token)), 'ok');
  t.equal(verifications, 1, 'the second use did not verify the signature again');
  const realNow = Date.now;
  Date.now = () => (now + 10) * 1000;
  try {
    t.equal(await reason(tokens.verifyAsync(token)), 'expired', 'a cached token still expires');
  } finally { Date.now = realNow; }
});

t.test('a different string with the same signature is verified, and refused', async (t) => {
  const now = Math.floor(Date.now() / 1000);
  const token = mint({ exp: now + 60, scope: 'read' });
  t.equal(await reason(tokens.verifyAsync(token)), 'ok');
  const [h, , s] = token.split('.');
  const forged = `${h}.${b64({ iss: ISSUER, tenant: 't1', sub: 'u1', iat: 1, exp: now + 60, scope: 'admin' })}.${s}`;
  verifications = 0;
  t.equal(await reason(tokens.verifyAsync(forged)), 'signature');
  t.equal(verifications, 1);
  t.equal(await reason(tokens.verifyAsync(forged)), 'signature', 'a refused token is never cached');
  t.equal(verifications, 2);
});

t.test('a new key object under the same kid (a reload) verifies again', async (t) => {
  const token = mint({ exp: Math.floor(Date.now() / 1000) + 60, n: 1 });
  t.equal(await reason(tokens.verifyAsync(token)), 'ok');
  key = { ...key };
  verifications = 0;
  t.equal(await reason(tokens.verifyAsync(token)), 'ok');
  t.equal(verifications, 1, 'the entry of the old key object was not honoured');
  // The key dropped from the ring: the token names no key, cached or not.
  const kept = key;
  key = { ...key, kid: 'k2' };
  t.equal(await reason(tokens.verifyAsync(token)), 'unknown_key');
  key = kept;
});

t.test('the cache is bounded, oldest first', async (t) => {
  const c = new VerifiedTokens(3);
  for (const x of ['a', 'b', 'c', 'd']) c.add(x, key);
  t.equal(c.size, 3);
  t.notOk(c.has('a', key), 'the oldest went');
  t.ok(c.has('d', key) && c.has('b', key));
});
