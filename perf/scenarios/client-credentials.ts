// client_credentials issuance alone: one POST /token per request, every answer checked.
import { header, safeJson, type Checker, type ReqSpec } from '../lib/checker.js';
import type { Target } from '../lib/target.js';
import { basic, postForm, str, type Opts } from '../lib/util.js';
import { ccBody, tokenPath } from './fixtures.js';
import { Unavailable, type Prepared, type Scenario } from './types.js';

interface Fx { path: string; auth: string; body: string; signed: boolean }

function classify(status: number, body: string, signed: boolean): string | null {
  if (status !== 200) return String(status);
  const j = safeJson(body);
  if (typeof j?.access_token !== 'string') return '200 without access_token';
  if (String(j.token_type).toLowerCase() !== 'bearer') return `token_type=${j.token_type}`;
  if (signed && j.access_token.split('.').length !== 3) return 'not a JWT';
  return null;
}

export const clientCredentials: Scenario = {
  name: 'client-credentials',
  unit: 'req/s', reqsPerUnit: 1, start: 250, factor: 1.5,
  sloMs: 50,
  describe: 'POST /token grant_type=client_credentials (issuance alone; svc signs each token with RS256)',

  async prepare(t: Target, opts: Opts): Promise<Prepared> {
    let c;
    if (t.peer) c = t.peer.cc;
    else if (t.bootstrap) c = t.bootstrap.clients.exchanger;
    else throw new Unavailable('no bootstrap clients');
    const auth = basic(c.client_id, c.client_secret);
    const body = ccBody(t, str(opts, 'scope'));
    const r = await postForm(t.url + tokenPath(t), Object.fromEntries(new URLSearchParams(body)), auth);
    const signed = !t.peer;
    const bad = classify(r.status, r.text, signed);
    if (bad !== null) throw new Unavailable(`client_credentials does not work yet: ${bad} ${r.text.slice(0, 200)}`);
    return {
      fixtures: { path: tokenPath(t), auth, body, signed } satisfies Fx,
      calibration: { client_credentials: 'ok 200' },
      notes: [`client ${c.client_id}; ${signed ? 'JWT access tokens' : 'opaque access tokens (peer)'}`],
    };
  },

  client(fx: Fx, check: Checker): ReqSpec[] {
    return [{
      method: 'POST', path: fx.path, body: fx.body,
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', authorization: fx.auth },
      setupRequest(req) { check.sent('client_credentials'); return req; },
      onResponse(status, body, _ctx, h) {
        if (status === 503) { check.shedOne(); if (!header(h, 'retry-after').length) check.note('503 without Retry-After'); return; }
        const bad = classify(status, body, fx.signed);
        if (bad === null) check.ok(); else check.miss('client_credentials', bad);
      },
    }];
  },
};
