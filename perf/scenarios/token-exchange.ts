// RFC 8693 token exchange with the spec's mix: 70% valid subject tokens (14% of those with an actor
// token), 10% expired, 10% bad signature, 10% revoked. Every answer is checked.
import { header, picker, rnd, safeJson, type Checker, type ReqSpec } from '../lib/checker.js';
import { basic, jwtPayload, num, postForm, stamp, tamperSignature, type Opts } from '../lib/util.js';
import type { Target } from '../lib/target.js';
import { AT_TYPE, TE_GRANT, ccTokens, expiredTokens, revokeAll } from './fixtures.js';
import { Unavailable, type Prepared, type Scenario } from './types.js';

type Kind = 'valid' | 'actor' | 'expired' | 'bad_signature' | 'revoked';

interface Fx { path: string; auth: string; bodies: Record<Kind, string[]>; mix: Array<[Kind, number]> }

/** null when the answer is right for the category, else a short description of what came back. */
function classify(kind: Kind, status: number, body: string): string | null {
  const j = safeJson(body);
  if (kind === 'valid' || kind === 'actor') {
    if (status !== 200) return `${status} ${j?.error ?? ''}`.trim();
    if (typeof j?.access_token !== 'string') return '200 without access_token';
    if (j.issued_token_type !== AT_TYPE) return `200 issued_token_type=${j.issued_token_type}`;
    if (kind === 'actor' && !jwtPayload(j.access_token)?.act) return '200 without act claim';
    return null;
  }
  if (status === 400 && j?.error === 'invalid_grant') return null;
  return `${status} ${j?.error ?? ''}`.trim();
}

export const tokenExchange: Scenario = {
  name: 'token-exchange',
  unit: 'req/s', reqsPerUnit: 1, start: 500, factor: 1.5,
  sloMs: 50,
  describe: 'POST /token token exchange; 70% valid (14% of those with actor_token), 10% expired, 10% bad signature, 10% revoked subject tokens',

  async prepare(t: Target, opts: Opts): Promise<Prepared> {
    if (t.peer) throw new Unavailable('token exchange is measured on svc only (the peer has no RFC 8693 grant enabled)');
    if (!t.bootstrap) throw new Unavailable('no bootstrap clients');
    const ex = t.bootstrap.clients.exchanger;
    const n = num(opts, 'tokens', 300);
    const notes: string[] = [];
    const auth = basic(ex.client_id, ex.client_secret);
    const exchange = (subject: string, actor?: string) => postForm(t.url + '/token', {
      grant_type: TE_GRANT, subject_token: subject, subject_token_type: AT_TYPE, audience: ex.audience,
      ...(actor ? { actor_token: actor, actor_token_type: AT_TYPE } : {}),
    }, auth);
    const valid = await ccTokens(t, ex, n);
    const actors = await ccTokens(t, ex, Math.max(10, n / 5));
    const revoked = await ccTokens(t, ex, Math.max(10, n / 3));
    await revokeAll(t, ex, revoked);
    const bad = (await ccTokens(t, ex, Math.max(10, n / 3))).map(tamperSignature);
    let expired: string[] = [];
    try {
      expired = await expiredTokens(t, Math.max(10, n / 3), stamp(), async (tok) => (await exchange(tok)).status === 400);
    } catch (e) {
      notes.push(`NO EXPIRED TOKENS: ${(e as Error).message}; the mix runs without its expired 10%`);
    }
    const body = (subject: string, actor?: string) => new URLSearchParams({
      grant_type: TE_GRANT, subject_token: subject, subject_token_type: AT_TYPE, audience: ex.audience,
      ...(actor ? { actor_token: actor, actor_token_type: AT_TYPE } : {}),
    }).toString();
    const bodies: Record<Kind, string[]> = {
      valid: valid.map((s) => body(s)),
      actor: valid.map((s, i) => body(s, actors[i % actors.length])),
      expired: expired.map((s) => body(s)),
      bad_signature: bad.map((s) => body(s)),
      revoked: revoked.map((s) => body(s)),
    };
    const mix: Array<[Kind, number]> = [['valid', 60.2], ['actor', 9.8], ['bad_signature', 10], ['revoked', 10]];
    if (expired.length) mix.push(['expired', 10]);
    // Calibration: two sequential requests of each category, checked as under load.
    const calibration: Record<string, string> = {};
    for (const [kind] of mix) {
      const answers: string[] = [];
      for (let i = 0; i < 2; i++) {
        const sample = bodies[kind][i % bodies[kind].length]!;
        const r = await postForm(t.url + '/token', Object.fromEntries(new URLSearchParams(sample)), auth);
        const bad = classify(kind, r.status, r.text);
        answers.push(bad === null ? `ok ${r.status}` : `WRONG ${bad}`);
      }
      calibration[kind] = answers.join(', ');
    }
    if (!calibration.valid!.startsWith('ok')) throw new Unavailable(`valid token exchange does not work yet: ${calibration.valid}`);
    notes.push(`${valid.length} valid subject tokens (client_credentials tokens of ${ex.client_id}), ${actors.length} actor tokens, ${revoked.length} revoked, ${bad.length} bad-signature, ${expired.length} expired; audience ${ex.audience}`);
    const fx: Fx = { path: '/token', auth, bodies, mix };
    return { fixtures: fx, calibration, notes };
  },

  client(fx: Fx, check: Checker): ReqSpec[] {
    const pick = picker(fx.mix);
    const headers = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', authorization: fx.auth };
    return [{
      method: 'POST', path: fx.path, headers,
      setupRequest(req, ctx) {
        const kind = pick();
        ctx.kind = kind;
        check.sent(kind);
        req.body = rnd(fx.bodies[kind]);
        return req;
      },
      onResponse(status, body, ctx, h) {
        if (status === 503) { check.shedOne(); if (!header(h, 'retry-after').length) check.note('503 without Retry-After'); return; }
        const bad = classify(ctx.kind, status, body);
        if (bad === null) check.ok(); else check.miss(ctx.kind, bad);
      },
    }];
  },
};
