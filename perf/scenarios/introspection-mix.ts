// Issue 19 item 3: the seed's introspection mix under strictValidation, from several resource servers:
// 60% valid, 5% exchanged tokens carrying `act`, 12% expired, 12% revoked, 6% wrong audience (a token
// for api A presented by the resource server of api B), 5% wrong client (a token for A issued to a
// client that is no longer allowed audience A). Every answer is checked: valid → active with sub and
// aud A; exchanged → active with `act`; the rest → exactly {"active":false}. svc only (the peer has no
// strictValidation or actor tokens).
import { picker, rnd, safeJson, header, type Checker, type ReqSpec } from '../lib/checker.js';
import { cliJson, type Target } from '../lib/target.js';
import { basic, http, num, pool, postForm, say, stamp, type Opts } from '../lib/util.js';
import { AT_TYPE, TE_GRANT, ccTokens, expiredTokens, revokeAll, type Cred } from './fixtures.js';
import { Unavailable, type Prepared, type Scenario } from './types.js';

type Kind = 'valid' | 'exchanged' | 'expired' | 'revoked' | 'wrong_audience' | 'wrong_client';
interface Fx { auths: { a: string[]; b: string[] }; bodies: Record<Kind, string[]>; mix: Array<[Kind, number]>; audA: string }

const MIX: Array<[Kind, number]> = [['valid', 60], ['exchanged', 5], ['expired', 12], ['revoked', 12], ['wrong_audience', 6], ['wrong_client', 5]];

function classify(kind: Kind, status: number, body: string, audA: string): string | null {
  if (status !== 200) return String(status);
  const j = safeJson(body);
  if (!j || typeof j !== 'object') return 'not json';
  if (kind === 'valid' || kind === 'exchanged') {
    if (j.active !== true) return `active=${j.active}`;
    if (typeof j.sub !== 'string') return 'active without sub';
    const aud = Array.isArray(j.aud) ? j.aud : [j.aud];
    if (!aud.includes(audA)) return 'aud without the resource server';
    if (kind === 'exchanged' && (typeof j.act !== 'object' || j.act === null)) return 'active without act';
    return null;
  }
  if (j.active !== false) return `active=${j.active}`;
  if (Object.keys(j).length !== 1) return 'inactive answer carries claims';
  return null;
}

export const introspectionMix: Scenario = {
  name: 'introspection-mix',
  unit: 'req/s', reqsPerUnit: 1, start: 1000, factor: 1.6,
  sloMs: 20,
  describe: "POST /introspect, the seed's mix under strictValidation: 60% valid, 5% exchanged (act), 12% expired, 12% revoked, 6% wrong audience, 5% wrong client; resource servers of two APIs",

  async prepare(t: Target, opts: Opts): Promise<Prepared> {
    if (t.peer || !t.bootstrap) throw new Unavailable('svc only (strictValidation and actor tokens)');
    const b = t.bootstrap;
    const n = num(opts, 'tokens', 300);
    const tag = stamp().replace(/[^0-9]/g, '');
    const audA = b.clients.resource_server.audience;
    const audB = `https://other-${tag}.svc.local`;
    const mk = (name: string, args: string[]): Cred => {
      const c = cliJson(['clients', 'create', '--tenant', b.tenant_id, '--name', `${name}-${tag}`, ...args, '--json']);
      if (!c?.client_id || !c?.client_secret) throw new Unavailable(`clients create ${name}: no credentials`);
      return { client_id: c.client_id, client_secret: c.client_secret };
    };
    // Resource servers: two strict ones for A, one strict for B.
    const rsA = [0, 1].map((i) => mk(`perf-mix-rs-a${i}`, ['--grant-types', 'client_credentials', '--introspect', '--audience', audA, '--strict']));
    const rsB = [mk('perf-mix-rs-b', ['--grant-types', 'client_credentials', '--introspect', '--audience', audB, '--strict'])];
    const ex = b.clients.exchanger;
    const exAuth = basic(ex.client_id, ex.client_secret);
    const exchange = async (subject: string, actor?: string) => {
      const r = await postForm(t.url + '/token', { grant_type: TE_GRANT, subject_token: subject, subject_token_type: AT_TYPE, audience: audA, ...(actor ? { actor_token: actor, actor_token_type: AT_TYPE } : {}) }, exAuth);
      if (r.status !== 200) throw new Unavailable(`token exchange -> ${r.status} ${r.text.slice(0, 200)}`);
      return r.json.access_token as string;
    };
    const subjects = await ccTokens(t, ex, n + 40 + 40);
    const valid = await pool(subjects.slice(0, n), 16, (s) => exchange(s));
    const actors = await ccTokens(t, ex, 10);
    const exchanged = await pool(subjects.slice(n, n + 40), 16, (s, i) => exchange(s, actors[i % actors.length]));
    const revoked = await pool(subjects.slice(n + 40), 16, (s) => exchange(s));
    await revokeAll(t, ex, revoked);
    // Wrong client: a client allowed audience A mints tokens for A, then loses A (admin API).
    const wc = mk('perf-mix-wrong-client', ['--grant-types', 'client_credentials', '--audiences', audA]);
    const wrongClient = await ccTokens(t, wc, 40);
    const put = await http(`${t.url}/api/admin/clients/${encodeURIComponent(wc.client_id)}`, {
      method: 'PUT', headers: { authorization: `Bearer ${b.admin_access_token}`, 'content-type': 'application/json', 'x-tenant-id': b.tenant_id },
      body: JSON.stringify({ allowed_audiences: [] }),
    });
    if (put.status !== 200) throw new Unavailable(`PUT client allowed_audiences [] -> ${put.status} ${put.text.slice(0, 200)}`);
    const probe = (tok: string, c: Cred) => postForm(t.url + '/introspect', { token: tok }, basic(c.client_id, c.client_secret));
    const expired = await expiredTokens(t, 40, tag, async (tok) => (await probe(tok, rsA[0]!)).json?.active === false);
    const body = (tok: string) => new URLSearchParams({ token: tok }).toString();
    const fx: Fx = {
      audA, mix: MIX,
      auths: { a: rsA.map((c) => basic(c.client_id, c.client_secret)), b: rsB.map((c) => basic(c.client_id, c.client_secret)) },
      bodies: { valid: valid.map(body), exchanged: exchanged.map(body), expired: expired.map(body), revoked: revoked.map(body), wrong_audience: valid.map(body), wrong_client: wrongClient.map(body) },
    };
    // Calibration: each category once, sequentially, checked as under load.
    const calibration: Record<string, string> = {};
    for (const [kind] of MIX) {
      const tok = new URLSearchParams(fx.bodies[kind][0]!).get('token')!;
      const r = await probe(tok, kind === 'wrong_audience' ? rsB[0]! : rsA[0]!);
      const bad = classify(kind, r.status, r.text, audA);
      calibration[kind] = bad === null ? 'ok' : `WRONG ${bad}`;
    }
    const notes = [`${valid.length} valid and ${exchanged.length} actor-exchanged tokens for ${audA}, ${revoked.length} revoked, ${expired.length} expired, ${wrongClient.length} of a client that lost ${audA}; resource servers: ${rsA.length} strict for ${audA}, ${rsB.length} strict for ${audB}`];
    say(notes[0]!);
    return { fixtures: fx, calibration, notes };
  },

  client(fx: Fx, check: Checker): ReqSpec[] {
    const pick = picker(fx.mix);
    return [{
      method: 'POST', path: '/introspect',
      setupRequest(req, ctx) {
        const kind = pick();
        ctx.kind = kind;
        check.sent(kind);
        req.headers = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', authorization: rnd(kind === 'wrong_audience' ? fx.auths.b : fx.auths.a) };
        req.body = rnd(fx.bodies[kind as Kind]);
        return req;
      },
      onResponse(status, body, ctx, h) {
        if (status === 503) { check.shedOne(); if (!header(h, 'retry-after').length) check.note('503 without Retry-After'); return; }
        const bad = classify(ctx.kind, status, body, fx.audA);
        if (bad === null) check.ok(); else check.miss(ctx.kind, bad);
      },
    }];
  },
};
