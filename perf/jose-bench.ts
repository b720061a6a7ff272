import { generateKeyPairSync } from 'node:crypto';
import os from 'node:os';
import { decodeJwt as joseDecode, importJWK, importPKCS8, jwtVerify, SignJWT } from 'jose';
import { decodeJwt, signingInput, signWith, TOKEN_TYPES, verifyJwt } from '../src/tokens/jwt.js';
import type { VerifyKey } from '../src/tokens/keys.js';

// Micro-benchmark (issue 18): jose 6 against our own JWS code on the paths that stay ours unless jose
// is within 5%: RS256 access-token verification (introspection cache miss, token-exchange subject),
// the decode of a cache hit, and RS256 signing (the signing threads). One process, no server.
//   node dist/perf/jose-bench.js [--seconds S]    (S per measurement and round; default 1)
// Each pair is measured in alternating rounds (ours, jose, ours, jose) so a drifting host affects both.

const secondsArg = process.argv.indexOf('--seconds');
const SECONDS = secondsArg > 0 ? Number(process.argv[secondsArg + 1]) : 1;
const ROUNDS = 2;
const INFLIGHT = 64;

const ISSUER = 'https://svc.perf.local';
const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
const kid = 'bench-rs256';
const key: VerifyKey = { kid, alg: 'RS256', publicKey: pair.publicKey, tenant: null };
const ring = { verifyKeyFor: (k: string) => (k === kid ? key : undefined) };
const joseVerifyKey = await importJWK({ ...pair.publicKey.export({ format: 'jwk' }) }, 'RS256');
const joseSignKey = await importPKCS8(pair.privateKey.export({ format: 'pem', type: 'pkcs8' }) as string, 'RS256');

const now = Math.floor(Date.now() / 1000);
// A payload shaped like ours (src/tokens/access-tokens.ts).
const claims = {
  iss: ISSUER, sub: 'user-4f1c2a', aud: ['https://api.example.com'], exp: now + 3600, iat: now, jti: 'AAEAAQ.3d1c0b8e9a7f6e5d4c3b2a19', client_id: 'perf-client-1',
  scope: 'read write', tenant: 'tenant-perf',
};
const header = { alg: 'RS256', kid, typ: TOKEN_TYPES.access };
const input = signingInput(header, claims);
const token = `${input}.${signWith('RS256', pair.privateKey, input).toString('base64url')}`;
const policy = { typ: TOKEN_TYPES.access, issuer: ISSUER };
const joseOpts = { algorithms: ['RS256'], typ: TOKEN_TYPES.access, issuer: ISSUER, requiredClaims: ['exp', 'iat'], clockTolerance: 5 };

// Sanity: both accept the token before anything is timed.
verifyJwt(ring, token, policy);
await jwtVerify(token, joseVerifyKey, joseOpts);

interface Result { name: string; usPerOp: number[] }

async function measure(fn: () => unknown, concurrent: boolean): Promise<number> {
  const end = process.hrtime.bigint() + BigInt(Math.round(SECONDS * 1e9));
  const start = process.hrtime.bigint();
  let n = 0;
  while (process.hrtime.bigint() < end) {
    if (concurrent) {
      const batch = new Array(INFLIGHT);
      for (let i = 0; i < INFLIGHT; i++) batch[i] = fn();
      await Promise.all(batch);
      n += INFLIGHT;
    } else {
      for (let i = 0; i < 20; i++) await fn();
      n += 20;
    }
  }
  return Number(process.hrtime.bigint() - start) / 1000 / n;
}

const cases: Array<{ name: string; ours: () => unknown; jose: () => unknown; concurrent: boolean }> = [
  { name: 'verify RS256 access token, sequential', ours: () => verifyJwt(ring, token, policy), jose: () => jwtVerify(token, joseVerifyKey, joseOpts), concurrent: false },
  { name: `verify RS256 access token, ${INFLIGHT} in flight`, ours: () => verifyJwt(ring, token, policy), jose: () => jwtVerify(token, joseVerifyKey, joseOpts), concurrent: true },
  { name: 'decode without verifying (introspection cache hit)', ours: () => decodeJwt(token), jose: () => joseDecode(token), concurrent: false },
  {
    name: 'sign RS256 access token, sequential',
    ours: () => { const i = signingInput(header, claims); return `${i}.${signWith('RS256', pair.privateKey, i).toString('base64url')}`; },
    jose: () => new SignJWT(claims).setProtectedHeader(header).sign(joseSignKey), concurrent: false,
  },
  {
    name: `sign RS256 access token, ${INFLIGHT} in flight`,
    ours: () => { const i = signingInput(header, claims); return `${i}.${signWith('RS256', pair.privateKey, i).toString('base64url')}`; },
    jose: () => new SignJWT(claims).setProtectedHeader(header).sign(joseSignKey), concurrent: true,
  },
];

console.log(`jose-bench: node ${process.version}, ${os.cpus().length} x ${os.cpus()[0]?.model ?? '?'}, loadavg ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}, ${SECONDS}s x ${ROUNDS} rounds per measurement`);
const results: Array<{ name: string; ours: Result; jose: Result }> = [];
for (const c of cases) {
  // Warm-up: JIT and WebCrypto key caches.
  for (let i = 0; i < 200; i++) { await c.ours(); await c.jose(); }
  const r = { name: c.name, ours: { name: 'ours', usPerOp: [] as number[] }, jose: { name: 'jose', usPerOp: [] as number[] } };
  for (let round = 0; round < ROUNDS; round++) {
    r.ours.usPerOp.push(await measure(c.ours, c.concurrent));
    r.jose.usPerOp.push(await measure(c.jose, c.concurrent));
  }
  results.push(r);
}
const best = (xs: number[]) => Math.min(...xs);
console.log('| path | ours µs/op | jose µs/op | jose / ours |');
console.log('|---|---|---|---|');
for (const r of results) {
  const o = best(r.ours.usPerOp), j = best(r.jose.usPerOp);
  console.log(`| ${r.name} | ${o.toFixed(1)} (${r.ours.usPerOp.map((x) => x.toFixed(1)).join(', ')}) | ${j.toFixed(1)} (${r.jose.usPerOp.map((x) => x.toFixed(1)).join(', ')}) | ${(j / o).toFixed(2)} |`);
}
console.log(`loadavg after: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
