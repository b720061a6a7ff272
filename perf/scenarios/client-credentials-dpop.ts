// client_credentials with a DPoP proof (RFC 9449) on every request: issuance of a sender-constrained
// token. The load process signs a fresh ES256 proof per request (its own CPU, not svc's). prepare() also
// times one proof verification alone, in the main process, for issue 31's "CPU per answer <= bearer's
// + 1.3x one proof verification".
import { createPrivateKey, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { verifyProof } from '../../src/dpop/proof.js';
import { header, safeJson, type Checker, type ReqSpec } from '../lib/checker.js';
import type { Target } from '../lib/target.js';
import { basic, postForm, str, type Opts } from '../lib/util.js';
import { ccBody, tokenPath } from './fixtures.js';
import { Unavailable, type Prepared, type Scenario } from './types.js';

interface Fx { path: string; htu: string; auth: string; body: string; jwk: Record<string, unknown> }

export const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

/** A DPoP proof for one request (ES256, JOSE signature encoding). */
export function proofFor(key: KeyObject, head: string, htu: string): string {
  const input = `${head}.${b64({ htm: 'POST', htu, jti: randomUUID(), iat: Math.floor(Date.now() / 1000) })}`;
  return `${input}.${sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

/** n proofs for one fresh key, for fixtures made before a run. */
export function dpopProofs(htu: string, n: number): string[] {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const { d: _d, ...pub } = privateKey.export({ format: 'jwk' }) as Record<string, unknown>;
  const head = b64({ typ: 'dpop+jwt', alg: 'ES256', jwk: pub });
  return Array.from({ length: n }, () => proofFor(privateKey, head, htu));
}

function classify(status: number, body: string): string | null {
  if (status !== 200) return String(status);
  const j = safeJson(body);
  if (typeof j?.access_token !== 'string') return '200 without access_token';
  if (j.token_type !== 'DPoP') return `token_type=${j.token_type}`;
  return null;
}

export const clientCredentialsDpop: Scenario = {
  name: 'client-credentials-dpop',
  unit: 'req/s', reqsPerUnit: 1, start: 250, factor: 1.5,
  sloMs: 50,
  describe: 'POST /token grant_type=client_credentials with a fresh DPoP proof (ES256) per request: proof verification, jti replay record, a cnf-bound RS256 token',

  async prepare(t: Target, opts: Opts): Promise<Prepared> {
    if (t.peer || !t.bootstrap) throw new Unavailable('svc only (bootstrap clients)');
    const c = t.bootstrap.clients.exchanger;
    const auth = basic(c.client_id, c.client_secret);
    const body = ccBody(t, str(opts, 'scope'));
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = privateKey.export({ format: 'jwk' }) as Record<string, unknown>;
    const { d: _d, ...pub } = jwk;
    const head = b64({ typ: 'dpop+jwt', alg: 'ES256', jwk: pub });
    // svc checks htu against its issuer's /token (the address clients know it by), not the socket the load goes to.
    const htu = `${t.bootstrap.issuer}/token`;
    const r = await postForm(t.url + tokenPath(t), Object.fromEntries(new URLSearchParams(body)), auth, { dpop: proofFor(privateKey, head, htu) });
    const bad = classify(r.status, r.text);
    if (bad !== null) throw new Unavailable(`DPoP client_credentials does not work: ${bad} ${r.text.slice(0, 200)}`);
    // One proof verification alone (jose, as svc does it), the yardstick of issue 31's target.
    const proofs = Array.from({ length: 2000 }, () => proofFor(privateKey, head, htu));
    for (const p of proofs.slice(0, 200)) await verifyProof(p, { htm: 'POST', htu });
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    for (const p of proofs) await verifyProof(p, { htm: 'POST', htu });
    const cpu = process.cpuUsage(cpu0);
    const wall = performance.now() - t0;
    return {
      fixtures: { path: tokenPath(t), htu, auth, body, jwk } satisfies Fx,
      calibration: { client_credentials_dpop: 'ok 200 DPoP' },
      notes: [`one proof verification alone (jose, ES256, main process): ${((cpu.user + cpu.system) / proofs.length).toFixed(1)} µs CPU, ${(wall * 1000 / proofs.length).toFixed(1)} µs wall, over ${proofs.length}`],
    };
  },

  client(fx: Fx, check: Checker): ReqSpec[] {
    const key = createPrivateKey({ key: fx.jwk as never, format: 'jwk' });
    const { d: _d, ...pub } = fx.jwk;
    const head = b64({ typ: 'dpop+jwt', alg: 'ES256', jwk: pub });
    return [{
      method: 'POST', path: fx.path, body: fx.body,
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', authorization: fx.auth },
      setupRequest(req) {
        check.sent('client_credentials_dpop');
        return { ...req, headers: { ...req.headers, dpop: proofFor(key, head, fx.htu) } };
      },
      onResponse(status, body, _ctx, h) {
        if (status === 503) { check.shedOne(); if (!header(h, 'retry-after').length) check.note('503 without Retry-After'); return; }
        const bad = classify(status, body);
        if (bad === null) check.ok(); else check.miss('client_credentials_dpop', bad);
      },
    }];
  },
};
