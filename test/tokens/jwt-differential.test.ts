import { constants, createHmac, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import fc from 'fast-check';
import { decodeJwt as joseDecode, importJWK, jwtVerify, type JWTHeaderParameters } from 'jose';
import t from 'tap';
import type { Config } from '../../src/config.js';
import { AccessTokens } from '../../src/tokens/access-tokens.js';
import { JwtError, verifyJwt, verifySignature, type VerifyOptions } from '../../src/tokens/jwt.js';
import type { SigningAlg, VerifyKey } from '../../src/tokens/keys.js';
import type { ShardingCache } from '../../src/tokens/sharding.js';
import type { Signer } from '../../src/tokens/signer.js';

// Differential test: our hand-written verifier (src/tokens/jwt.ts, kept on the hot path, see
// docs/decisions.md) and jose's jwtVerify configured with the same policy must accept exactly the same
// tokens. Tokens are generated valid and then mutated in the ways RFC 8725 and past JWT library bugs
// suggest. A disagreement is a bug in ours. Seeded: FC_SEED=<n> replays a failure.

const ISSUER = 'https://issuer.test';
const NOW = 1_800_000_000;
const TOL = 5;

type Name = 'rs' | 'ps' | 'es' | 'ed' | 'attacker' | 'attackerEc' | 'attackerEd';
const pairs: Record<Name, { privateKey: KeyObject; publicKey: KeyObject }> = {
  rs: generateKeyPairSync('rsa', { modulusLength: 2048 }),
  ps: generateKeyPairSync('rsa', { modulusLength: 2048 }),
  es: generateKeyPairSync('ec', { namedCurve: 'P-256' }),
  attacker: generateKeyPairSync('rsa', { modulusLength: 2048 }),
  attackerEc: generateKeyPairSync('ec', { namedCurve: 'P-256' }),
  ed: generateKeyPairSync('ed25519'),
  attackerEd: generateKeyPairSync('ed25519'),
};
// The RSA keys are the deployment's (they verify any tenant's tokens); the ES256 and Ed25519 keys are
// tenants' own, and verify only tokens whose tenant claim names their tenant (KeyRing.verifyKeyFor).
const ours: Record<string, VerifyKey> = {
  'kid-rs': { kid: 'kid-rs', alg: 'RS256', publicKey: pairs.rs.publicKey, tenant: null },
  'kid-ps': { kid: 'kid-ps', alg: 'PS256', publicKey: pairs.ps.publicKey, tenant: null },
  'kid-es': { kid: 'kid-es', alg: 'ES256', publicKey: pairs.es.publicKey, tenant: 't-es' },
  'kid-ed': { kid: 'kid-ed', alg: 'EdDSA', publicKey: pairs.ed.publicKey, tenant: 't-ed' },
};
const ring = {
  verifyKeyFor: (kid: string, tenant: unknown) => {
    const k = Object.hasOwn(ours, kid) ? ours[kid] : undefined;
    return k && (k.tenant === null || k.tenant === tenant) ? k : undefined;
  },
};
const policy: VerifyOptions = { typ: 'at+jwt', issuer: ISSUER, clockTolerance: TOL, now: NOW };
const joseKeys = new Map<string, Awaited<ReturnType<typeof importJWK>>>();
/** Each key under each name of its algorithm: an Ed25519 key answers to EdDSA and to Ed25519 (RFC 9864). */
const NAMES: Record<SigningAlg, string[]> = { RS256: ['RS256'], PS256: ['PS256'], ES256: ['ES256'], EdDSA: ['EdDSA', 'Ed25519'] };
for (const k of Object.values(ours)) {
  for (const alg of NAMES[k.alg]) joseKeys.set(`${k.kid} ${alg}`, await importJWK({ ...k.publicKey.export({ format: 'jwk' }) }, alg) as Awaited<ReturnType<typeof importJWK>>);
}

/** The same policy in jose's terms: our keys only by kid and for their tenant, the key's pinned alg, no crit at all. */
async function joseAccepts(token: string): Promise<boolean> {
  try {
    await jwtVerify(token, (h: JWTHeaderParameters, tok) => {
      if (h.crit !== undefined) throw new Error('crit is refused');
      let tenant: unknown;
      try { tenant = JSON.parse(new TextDecoder().decode(Buffer.from(String(tok.payload), 'base64url'))).tenant; } catch { /* names none */ }
      const k = typeof h.kid === 'string' && Object.hasOwn(ours, h.kid) ? ours[h.kid] : undefined;
      if (!k || (k.tenant !== null && k.tenant !== tenant)) throw new Error('not our key, or not this tenant\'s');
      if (typeof h.alg !== 'string' || !NAMES[k.alg].includes(h.alg)) throw new Error('not its algorithm');
      return joseKeys.get(`${k.kid} ${h.alg}`)!;
    }, {
      algorithms: ['RS256', 'PS256', 'ES256', 'EdDSA', 'Ed25519'], typ: 'at+jwt', issuer: ISSUER, requiredClaims: ['exp', 'iat'],
      clockTolerance: TOL, currentDate: new Date(NOW * 1000), maxTokenAge: Number.MAX_VALUE,
    });
    return true;
  } catch { return false; }
}

/** Ours, sync and async (the introspection path); anything but a JwtError is itself a failure. */
const accessTokens = new AccessTokens({ issuer: ISSUER } as Config, ring as never, { verify: verifySignature } as unknown as Signer, {} as ShardingCache);
async function oursAccept(token: string): Promise<{ sync: boolean; async: boolean }> {
  const run = async (f: () => unknown) => {
    try { await f(); return true; } catch (err) {
      if (err instanceof JwtError) return false;
      throw new Error(`our verifier threw ${String(err)} instead of a JwtError`);
    }
  };
  const realNow = Date.now;
  Date.now = () => NOW * 1000 + 500;
  try {
    // The hot paths hand verifyAsync the claims their read-ahead decoded with jose from the same string.
    let ahead: unknown;
    try { ahead = joseDecode(token); } catch { ahead = undefined; }
    const async = await run(() => accessTokens.verifyAsync(token));
    const withAhead = ahead === undefined ? async : await run(() => accessTokens.verifyAsync(token, ahead as never));
    if (withAhead !== async) throw new Error(`verifyAsync with read-ahead claims answered ${withAhead}, without ${async}, on ${JSON.stringify(token)}`);
    return { sync: await run(() => verifyJwt(ring, token, policy)), async };
  } finally { Date.now = realNow; }
}

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64url');
const algOf: Record<Name, string> = { rs: 'RS256', ps: 'PS256', es: 'ES256', ed: 'EdDSA', attacker: 'RS256', attackerEc: 'ES256', attackerEd: 'EdDSA' };
/** The tenant a signer's tokens name: the owner of its key (the attackers' forge for the tenants whose keys they imitate). */
const tenantOf: Record<Name, string | undefined> = { rs: undefined, ps: undefined, es: 't-es', ed: 't-ed', attacker: undefined, attackerEc: 't-es', attackerEd: 't-ed' };

function signInput(name: Name, alg: string, input: string): Buffer {
  const data = Buffer.from(input);
  const key = pairs[name].privateKey;
  if (alg === 'none') return Buffer.alloc(0);
  if (alg === 'HS256') return createHmac('sha256', pairs[name].publicKey.export({ format: 'pem', type: 'spki' })).update(data).digest();
  // Whatever the header says, an Ed25519 key can only make an Ed25519 signature (and so on for each key).
  if (name === 'ed' || name === 'attackerEd') return sign(null, data, key);
  if (name === 'es' || name === 'attackerEc') return sign('sha256', data, { key, dsaEncoding: 'ieee-p1363' });
  if (alg === 'PS256') return sign('sha256', data, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 });
  return sign('sha256', data, key);
}

// ---- generators: mostly valid, each part mutated now and then, so that mutations also meet in pairs ----
/** The usual value most of the time, otherwise one of the odd ones. */
const mostly = <T>(usual: T, odd: fc.Arbitrary<T>, weight = 8) => fc.oneof({ weight, arbitrary: fc.constant(usual) }, { weight: 2, arbitrary: odd });
const rawNumber = (base: number) => fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(-TOL - 1, -TOL, -TOL + 1, -1, 0, 1, TOL - 1, TOL, TOL + 1, 600, -600).map((d) => String(base + d)) },
  { weight: 1, arbitrary: fc.constantFrom('1e400', '-1e400', '99999999999999999999999', '-99999999999999999999999', '1.5e9', '0', '-0', `${base}.5`, `${base - 0.5}`, `"${base}"`, 'null', 'true', `[${base}]`) },
  { weight: 2, arbitrary: fc.integer({ min: -1000, max: 1000 }).map((d) => String(base + d)) },
);
/** A claim's raw JSON value, or undefined to leave it out. */
const claim = (usual: string, odd: fc.Arbitrary<string>) => fc.oneof(
  { weight: 12, arbitrary: fc.constant(usual as string | undefined) }, { weight: 6, arbitrary: odd.map((v) => v as string | undefined) }, { weight: 1, arbitrary: fc.constant(undefined) });
const payloadJson = (name: Name) => fc.record({
  tenant: mostly<string | undefined>(tenantOf[name] === undefined ? undefined : JSON.stringify(tenantOf[name]),
    fc.constantFrom<string | undefined>('"t-es"', '"t-ed"', '"t-other"', '["t-ed"]', 'null', undefined), 12),
  iss: claim(JSON.stringify(ISSUER), fc.constantFrom('"https://other.test"', `"${ISSUER}/"`, '123', 'null', `[${JSON.stringify(ISSUER)}]`)),
  exp: claim(String(NOW + 300), rawNumber(NOW)),
  iat: claim(String(NOW), rawNumber(NOW)),
  nbf: fc.oneof({ weight: 3, arbitrary: fc.constant(undefined as string | undefined) }, { weight: 1, arbitrary: rawNumber(NOW).map((v) => v as string | undefined) }),
  dup: mostly<[string, string] | undefined>(undefined, fc.constantFrom<[string, string]>(['iss', '"https://other.test"'], ['exp', String(NOW - 100)], ['iss', JSON.stringify(ISSUER)], ['exp', String(NOW + 100)], ['iat', String(NOW + 100)])),
  extra: fc.constantFrom('', ',"sub":"u1","scope":"read"', ',"__proto__":{"iss":"x"}', ',"aud":["a","b"]'),
  shape: mostly('object', fc.constantFrom('array', 'string', 'bom', 'badutf8', 'trailing'), 16),
}).map((p) => {
  const entries: string[] = [];
  for (const [k, v] of [['iss', p.iss], ['exp', p.exp], ['iat', p.iat], ['nbf', p.nbf], ['tenant', p.tenant], p.dup ?? [undefined, undefined]] as Array<[string | undefined, string | undefined]>) if (k && v !== undefined) entries.push(`"${k}":${v}`);
  const obj = `{${entries.join(',')}${entries.length ? p.extra : p.extra.slice(1)}}`;
  switch (p.shape) {
    case 'array': return Buffer.from(`[${obj}]`);
    case 'string': return Buffer.from(JSON.stringify(obj));
    case 'bom': return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(obj)]);
    case 'badutf8': return Buffer.concat([Buffer.from(obj.slice(0, -1)), Buffer.from(',"x":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
    case 'trailing': return Buffer.from(`${obj} `);
    default: return Buffer.from(obj);
  }
});

const signer = fc.constantFrom<Name>('rs', 'rs', 'rs', 'rs', 'ps', 'ps', 'es', 'es', 'ed', 'ed', 'ed', 'attacker', 'attackerEc', 'attackerEd');
const headerGen = (name: Name) => fc.record({
  alg: mostly(algOf[name], fc.constantFrom('RS256', 'PS256', 'ES256', 'EdDSA', 'Ed25519', 'HS256', 'none', 'RS512', 'rs256', 'ES256K', 'eddsa', 'Ed448'), 16),
  kid: mostly<unknown>(`kid-${name === 'attacker' ? 'rs' : name === 'attackerEc' ? 'es' : name === 'attackerEd' ? 'ed' : name}`,
    fc.constantFrom<unknown>('kid-rs', 'kid-ps', 'kid-es', 'kid-ed', 'unknown', '../../etc/passwd', "' or 1=1 --", ['kid-rs'], 1, null, undefined, 'KID-RS', 'kid-rs ', 'toString', '__proto__'), 16),
  typ: mostly<unknown>('at+jwt', fc.constantFrom<unknown>('application/at+jwt', 'AT+JWT', 'Application/AT+JWT', 'JWT', 'jwt', 'x/at+jwt', 'at+jwt ', '', undefined, 1, ['at+jwt'])),
  crit: mostly<unknown>(undefined, fc.constantFrom<unknown>(['b64'], ['exp'], [], 'b64', ['kid'], [''], ['b64', 'b64']), 16),
  b64: mostly<unknown>(undefined, fc.constantFrom<unknown>(true, false, 'false'), 16),
  foreign: mostly<string | undefined>(undefined, fc.constantFrom('jku', 'x5u', 'jwk', 'x5c')),
  dupAlg: mostly(false, fc.constant(true), 16),
  shape: mostly('object', fc.constantFrom('array', 'null', 'bom'), 24),
}).map((h) => {
  const parts: string[] = [];
  // A duplicate alg member: JSON.parse keeps the last, and so must both verifiers.
  if (h.dupAlg) parts.push('"alg":"none"');
  parts.push(`"alg":${JSON.stringify(h.alg)}`);
  if (h.kid !== undefined) parts.push(`"kid":${JSON.stringify(h.kid)}`);
  if (h.typ !== undefined) parts.push(`"typ":${JSON.stringify(h.typ)}`);
  if (h.crit !== undefined) parts.push(`"crit":${JSON.stringify(h.crit)}`);
  if (h.b64 !== undefined) parts.push(`"b64":${JSON.stringify(h.b64)}`);
  if (h.foreign === 'jwk') parts.push(`"jwk":${JSON.stringify(pairs.attacker.publicKey.export({ format: 'jwk' }))}`);
  else if (h.foreign === 'x5c') parts.push('"x5c":["MIIB"]');
  else if (h.foreign) parts.push(`"${h.foreign}":"https://attacker.example/keys"`);
  const obj = `{${parts.join(',')}}`;
  return Buffer.from(h.shape === 'array' ? `[${obj}]` : h.shape === 'null' ? 'null' : h.shape === 'bom' ? `\ufeff${obj}` : obj);
});

/** How a segment is encoded: canonical base64url, or one of the non-canonical spellings. */
const encoding = mostly('canonical', fc.constantFrom('pad', 'pad1', 'std', 'space', 'newline', 'tab', 'trailbits', 'star', 'unicode', 'empty'), 16);
function encode(bytes: Buffer, how: string): string {
  const s = b64(bytes);
  switch (how) {
    case 'pad': return Buffer.from(bytes).toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
    case 'pad1': return `${s}=`;
    case 'std': return Buffer.from(bytes).toString('base64');
    case 'space': return `${s.slice(0, 3)} ${s.slice(3)}`;
    case 'newline': return `${s}\n`;
    case 'tab': return `\t${s}`;
    case 'trailbits': {
      // Change the unused low bits of the last character: decodes to the same bytes.
      if (s.length % 4 === 0) return s;
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      const i = alphabet.indexOf(s[s.length - 1]!);
      return s.slice(0, -1) + alphabet[i ^ 1];
    }
    case 'star': return `${s.slice(0, 2)}*${s.slice(2)}`;
    case 'unicode': return `${s.slice(0, 2)}é${s.slice(2)}`;
    case 'empty': return '';
    default: return s;
  }
}

/** Mutations after signing: the signature no longer matches, or the compact form is broken. */
const after = mostly('none', fc.constantFrom('flip', 'flipLast', 'strip', 'dropSig', 'extraSeg', 'twoDots', 'lead', 'trail', 'sigPad', 'sigStd', 'sigSpace', 'sigTrailBits', 'sigTruncate', 'sigDouble', 'swapPayload'), 12);

const tokenGen = signer.chain((name) => fc.record({
  name: fc.constant(name), header: headerGen(name), payload: payloadJson(name), he: encoding, pe: encoding, after, bit: fc.nat(),
}));

function build(g: { name: Name; header: Buffer; payload: Buffer; he: string; pe: string; after: string; bit: number }): string {
  const h = encode(g.header, g.he);
  const p = encode(g.payload, g.pe);
  let alg = 'RS256';
  try { alg = String(JSON.parse(g.header.toString().replace(/^\ufeff/, '')).alg); } catch { /* keep */ }
  const sig = signInput(g.name, alg, `${h}.${p}`);
  const s = b64(sig);
  switch (g.after) {
    case 'flip': { const b = Buffer.from(sig); if (b.length) b[g.bit % b.length]! ^= 1 << (g.bit % 8); return `${h}.${p}.${b64(b)}`; }
    case 'flipLast': { const b = Buffer.from(sig); if (b.length) b[b.length - 1]! ^= 1; return `${h}.${p}.${b64(b)}`; }
    case 'strip': return `${h}.${p}.`;
    case 'dropSig': return `${h}.${p}`;
    case 'extraSeg': return `${h}.${p}.${s}.${s}`;
    case 'twoDots': return `${h}..${p}.${s}`;
    case 'lead': return ` ${h}.${p}.${s}`;
    case 'trail': return `${h}.${p}.${s} `;
    case 'sigPad': return `${h}.${p}.${encode(sig, 'pad')}`;
    case 'sigStd': return `${h}.${p}.${encode(sig, 'std')}`;
    case 'sigSpace': return `${h}.${p}.${encode(sig, 'space')}`;
    case 'sigTrailBits': return `${h}.${p}.${encode(sig, 'trailbits')}`;
    case 'sigTruncate': return `${h}.${p}.${s.slice(0, -2)}`;
    case 'sigDouble': return `${h}.${p}.${s}${s}`;
    case 'swapPayload': return `${h}.${b64(Buffer.from(`{"iss":"${ISSUER}","exp":${NOW + 300},"iat":${NOW}}`))}.${s}`;
    default: return `${h}.${p}.${s}`;
  }
}

t.test('our verifier and jose jwtVerify accept exactly the same tokens', async (t) => {
  const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : Date.now() ^ (Math.random() * 0x7fffffff);
  t.comment(`fast-check seed ${seed} (replay with FC_SEED=${seed})`);
  let accepted = 0, runs = 0;
  const outcome = await fc.check(fc.asyncProperty(tokenGen, async (g) => {
    const token = build(g);
    runs++;
    const [j, o] = await Promise.all([joseAccepts(token), oursAccept(token)]);
    if (j) accepted++;
    // Our access tokens (the async path) expire exactly at exp; the tolerance is kept for iat and nbf only.
    const own = j && Number(joseDecode(token).exp) > NOW;
    if (o.sync !== j || o.async !== own) throw new Error(`disagreement: jose ${j} (own-token expiry ${own}), ours sync ${o.sync}, async ${o.async} on ${JSON.stringify(token)}`);
  }), { seed, numRuns: 4000, interruptAfterTimeLimit: 15_000, markInterruptAsFailure: false, endOnFailure: true });
  if (outcome.failed) t.fail(`${fc.defaultReportMessage(outcome) ?? 'property failed'}\nseed ${seed}`);
  else t.pass(`${runs} tokens, ${accepted} accepted by both`);
  t.ok(accepted > runs / 20, 'the generator produces enough valid tokens for the agreement to mean something');
});

t.test('fixed cases from RFC 8725 and the generator edges', async (t) => {
  const hdr = (o: Record<string, unknown>) => b64(JSON.stringify(o));
  const pl = b64(JSON.stringify({ iss: ISSUER, exp: NOW + 300, iat: NOW }));
  const edPl = b64(JSON.stringify({ iss: ISSUER, exp: NOW + 300, iat: NOW, tenant: 't-ed' }));
  const esPl = b64(JSON.stringify({ iss: ISSUER, exp: NOW + 300, iat: NOW, tenant: 't-es' }));
  const signed = (h: string, p = pl, name: Name = 'rs', alg = 'RS256') => `${h}.${p}.${b64(signInput(name, alg, `${h}.${p}`))}`;
  const cases: Array<[string, string, boolean]> = [
    ['valid', signed(hdr({ alg: 'RS256', kid: 'kid-rs', typ: 'at+jwt' })), true],
    ['typ with application/ prefix (RFC 7515 4.1.9)', signed(hdr({ alg: 'RS256', kid: 'kid-rs', typ: 'application/at+jwt' })), true],
    ['= padding on the signature', (() => { const h = hdr({ alg: 'RS256', kid: 'kid-rs', typ: 'at+jwt' }); return `${h}.${pl}.${signInput('rs', 'RS256', `${h}.${pl}`).toString('base64').replace(/\+/g, '-').replace(/\//g, '_')}`; })(), true],
    ['kid as an array', signed(hdr({ alg: 'RS256', kid: ['kid-rs'], typ: 'at+jwt' })), false],
    ['alg none', `${hdr({ alg: 'none', kid: 'kid-rs', typ: 'at+jwt' })}.${pl}.`, false],
    ['HS256 with our public key as secret', signed(hdr({ alg: 'HS256', kid: 'kid-rs', typ: 'at+jwt' }), pl, 'rs', 'HS256'), false],
    ['PS256 header on the RS256 key', signed(hdr({ alg: 'PS256', kid: 'kid-rs', typ: 'at+jwt' }), pl, 'rs', 'PS256'), false],
    ['crit b64 true', signed(hdr({ alg: 'RS256', kid: 'kid-rs', typ: 'at+jwt', crit: ['b64'], b64: true })), false],
    ['no iat (RFC 9068 2.2)', signed(hdr({ alg: 'RS256', kid: 'kid-rs', typ: 'at+jwt' }), b64(JSON.stringify({ iss: ISSUER, exp: NOW + 300 }))), false],
    ['nbf as a string', signed(hdr({ alg: 'RS256', kid: 'kid-rs', typ: 'at+jwt' }), b64(JSON.stringify({ iss: ISSUER, exp: NOW + 300, iat: NOW, nbf: 'x' }))), false],
    ['whitespace inside a signed header segment', signed(` ${hdr({ alg: 'RS256', kid: 'kid-rs', typ: 'at+jwt' })}`), true],
    ['+ in a segment', signed(hdr({ alg: 'RS256', kid: 'kid-rs', typ: 'at+jwt' }).replace(/^(..)/, '$1+')), false],
    ['EdDSA on the tenant\'s Ed25519 key', signed(hdr({ alg: 'EdDSA', kid: 'kid-ed', typ: 'at+jwt' }), edPl, 'ed', 'EdDSA'), true],
    ['Ed25519 (RFC 9864) on the same key', signed(hdr({ alg: 'Ed25519', kid: 'kid-ed', typ: 'at+jwt' }), edPl, 'ed', 'Ed25519'), true],
    ['ES256 on the tenant\'s ES256 key', signed(hdr({ alg: 'ES256', kid: 'kid-es', typ: 'at+jwt' }), esPl, 'es', 'ES256'), true],
    ['ES256 header over the Ed25519 key', signed(hdr({ alg: 'ES256', kid: 'kid-ed', typ: 'at+jwt' }), edPl, 'ed', 'ES256'), false],
    ['EdDSA header naming the ES256 key, signed by the Ed25519 key', signed(hdr({ alg: 'EdDSA', kid: 'kid-es', typ: 'at+jwt' }), esPl, 'ed', 'EdDSA'), false],
    ['ES256 header naming the Ed25519 key, signed by the ES256 key', signed(hdr({ alg: 'ES256', kid: 'kid-ed', typ: 'at+jwt' }), edPl, 'es', 'ES256'), false],
    ['HS256 with the Ed25519 public key as secret', signed(hdr({ alg: 'HS256', kid: 'kid-ed', typ: 'at+jwt' }), edPl, 'ed', 'HS256'), false],
    ['alg none on the Ed25519 key', `${hdr({ alg: 'none', kid: 'kid-ed', typ: 'at+jwt' })}.${edPl}.`, false],
    ['the Ed25519 tenant\'s key on a token of another tenant', signed(hdr({ alg: 'EdDSA', kid: 'kid-ed', typ: 'at+jwt' }), esPl, 'ed', 'EdDSA'), false],
    ['the ES256 tenant\'s key on a token without a tenant', signed(hdr({ alg: 'ES256', kid: 'kid-es', typ: 'at+jwt' }), pl, 'es', 'ES256'), false],
    ['an attacker\'s Ed25519 key under our kid', signed(hdr({ alg: 'EdDSA', kid: 'kid-ed', typ: 'at+jwt' }), edPl, 'attackerEd', 'EdDSA'), false],
    ['Ed448 header on the Ed25519 key', signed(hdr({ alg: 'Ed448', kid: 'kid-ed', typ: 'at+jwt' }), edPl, 'ed', 'Ed448'), false],
  ];
  for (const [name, token, expected] of cases) {
    const [j, o] = await Promise.all([joseAccepts(token), oursAccept(token)]);
    t.equal(j, expected, `jose: ${name}`);
    t.same(o, { sync: expected, async: expected }, `ours: ${name}`);
  }
});
