// Token exchange of one valid subject token, with and without DPoP (issue 31: "DPoP token exchange: CPU
// per answer <= bearer's + 1.3x one proof verification"). Both send the same form; the DPoP variant adds
// a fresh ES256 proof per request (signed by the load process) and gets a cnf-bound token back.
import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { header, safeJson, type Checker, type ReqSpec } from '../lib/checker.js';
import type { Target } from '../lib/target.js';
import { basic, postForm } from '../lib/util.js';
import { b64, proofFor } from './client-credentials-dpop.js';
import { AT_TYPE, TE_GRANT, ccTokens } from './fixtures.js';
import { Unavailable, type Prepared, type Scenario } from './types.js';

interface Fx { path: string; htu: string; auth: string; body: string; jwk?: Record<string, unknown> }
function classify(status: number, body: string, dpop: boolean): string | null {
  if (status !== 200) return String(status);
  const j = safeJson(body);
  if (typeof j?.access_token !== 'string') return '200 without access_token';
  if (j.token_type !== (dpop ? 'DPoP' : 'Bearer')) return `token_type=${j.token_type}`;
  return null;
}

export function exchangeOnly(dpop: boolean): Scenario {
  return {
    name: dpop ? 'exchange-dpop' : 'exchange-bearer',
    unit: 'req/s', reqsPerUnit: 1, start: 250, factor: 1.5, sloMs: 50,
    describe: `POST /token token exchange of a valid subject token for the resource audience${dpop ? ', with a fresh DPoP proof (ES256) per request: a cnf-bound token' : ' (Bearer)'}`,
    async prepare(t: Target): Promise<Prepared> {
      if (t.peer || !t.bootstrap) throw new Unavailable('svc only (bootstrap clients)');
      const ex = t.bootstrap.clients.exchanger;
      const [subject] = await ccTokens(t, ex, 1);
      const body = new URLSearchParams({ grant_type: TE_GRANT, subject_token: subject!, subject_token_type: AT_TYPE, audience: ex.audience }).toString();
      const htu = `${t.bootstrap.issuer}/token`;
      const fx: Fx = { path: '/token', htu, auth: basic(ex.client_id, ex.client_secret), body };
      const extra: Record<string, string> = {};
      if (dpop) {
        const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
        fx.jwk = privateKey.export({ format: 'jwk' }) as Record<string, unknown>;
        const { d: _d, ...pub } = fx.jwk;
        extra.dpop = proofFor(privateKey, b64({ typ: 'dpop+jwt', alg: 'ES256', jwk: pub }), htu);
      }
      const r = await postForm(t.url + fx.path, Object.fromEntries(new URLSearchParams(body)), fx.auth, extra);
      const bad = classify(r.status, r.text, dpop);
      if (bad !== null) throw new Unavailable(`exchange does not work: ${bad} ${r.text.slice(0, 200)}`);
      return { fixtures: fx, calibration: { exchange: `ok 200 ${dpop ? 'DPoP' : 'Bearer'}` }, notes: [] };
    },
    client(fx: Fx, check: Checker): ReqSpec[] {
      const key = fx.jwk ? createPrivateKey({ key: fx.jwk as never, format: 'jwk' }) : undefined;
      const head = fx.jwk ? b64({ typ: 'dpop+jwt', alg: 'ES256', jwk: (({ d: _d, ...pub }) => pub)(fx.jwk) }) : '';
      return [{
        method: 'POST', path: fx.path, body: fx.body,
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', authorization: fx.auth },
        setupRequest(req) {
          check.sent('exchange');
          return key ? { ...req, headers: { ...req.headers, dpop: proofFor(key, head, fx.htu) } } : req;
        },
        onResponse(status, body, _ctx, h) {
          if (status === 503) { check.shedOne(); if (!header(h, 'retry-after').length) check.note('503 without Retry-After'); return; }
          const bad = classify(status, body, key !== undefined);
          if (bad === null) check.ok(); else check.miss('exchange', bad);
        },
      }];
    },
  };
}
