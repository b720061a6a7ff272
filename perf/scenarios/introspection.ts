// RFC 7662 introspection from several resource-server clients: 80% valid, 10% revoked, 10% expired
// tokens; valid must answer active:true (svc: with sub), the others exactly {"active":false}.
import { header, picker, rnd, safeJson, type Checker, type ReqSpec } from '../lib/checker.js';
import { cliJson, type Target } from '../lib/target.js';
import { basic, num, postForm, say, stamp, type Opts } from '../lib/util.js';
import { AT_TYPE, TE_GRANT, ccTokens, expiredTokens, introspectPath, revokeAll, type Cred } from './fixtures.js';
import { Unavailable, type Prepared, type Scenario } from './types.js';
import { dpopProofs } from './client-credentials-dpop.js';

type Kind = 'valid' | 'revoked' | 'expired';
interface Fx { path: string; auths: string[]; bodies: Record<Kind, string[]>; mix: Array<[Kind, number]>; needSub: boolean; jwt?: boolean }

/** The JSON answer inside a signed introspection answer (RFC 9701: its token_introspection claim). */
function insideJwt(body: string): string {
  const payload = safeJson(Buffer.from(body.split('.')[1] ?? '', 'base64url').toString());
  return JSON.stringify(payload?.token_introspection ?? null);
}

function classify(kind: Kind, status: number, body: string, needSub: boolean): string | null {
  if (status !== 200) return String(status);
  const j = safeJson(body);
  if (!j || typeof j !== 'object') return 'not json';
  if (kind === 'valid') {
    if (j.active !== true) return `active=${j.active}`;
    if (needSub && typeof j.sub !== 'string') return 'active without sub';
    return null;
  }
  if (j.active !== false) return `active=${j.active}`;
  if (Object.keys(j).length !== 1) return 'inactive answer carries claims';
  return null;
}

async function makeTokens(t: Target, n: number): Promise<{ valid: string[]; revoked: string[]; issuer: Cred; via: string }> {
  if (t.peer) {
    const valid = await ccTokens(t, t.peer.cc, n);
    const revoked = await ccTokens(t, t.peer.cc, Math.max(10, n / 8));
    await revokeAll(t, t.peer.cc, revoked);
    return { valid, revoked, issuer: t.peer.cc, via: `client_credentials tokens of ${t.peer.cc.client_id}` };
  }
  const { exchanger: ex, resource_server: rs } = t.bootstrap!.clients;
  // Tokens minted for the resource server's audience (token exchange), so strict audience checks pass.
  const auth = basic(ex.client_id, ex.client_secret);
  const subjects = await ccTokens(t, ex, n + Math.max(10, n / 8));
  const out: string[] = [];
  let via = `token exchange of ${ex.client_id} tokens for audience ${rs.audience}`;
  for (const s of subjects.slice(0, 2)) {
    const r = await postForm(t.url + '/token', { grant_type: TE_GRANT, subject_token: s, subject_token_type: AT_TYPE, audience: rs.audience }, auth);
    if (r.status !== 200) { via = `client_credentials tokens of ${ex.client_id} (token exchange answered ${r.status})`; break; }
    out.push(r.json.access_token);
  }
  if (out.length === 2) {
    const { pool } = await import('../lib/util.js');
    const rest = await pool(subjects.slice(2), 16, async (s) => {
      const r = await postForm(t.url + '/token', { grant_type: TE_GRANT, subject_token: s, subject_token_type: AT_TYPE, audience: rs.audience }, auth);
      if (r.status !== 200) throw new Unavailable(`token exchange -> ${r.status}`);
      return r.json.access_token as string;
    });
    out.push(...rest);
  } else {
    out.length = 0; out.push(...subjects);
  }
  const revoked = out.slice(n);
  await revokeAll(t, ex, revoked);
  return { valid: out.slice(0, n), revoked, issuer: ex, via };
}

/**
 * Issue 22's CPU-cost variants: `introspection-hit` sends only valid tokens (after the first answer
 * per token and client, each is a cache hit: decode, one MGET, the cached answer); `introspection-miss`
 * sends only revoked tokens, which are never cached, so each goes the verification path: decode, the
 * same MGET, the signature check, then the inactive answer (no answer serialisation, no cache write).
 * The scenario repeats its tokens, so since run 85 the signature check is mostly the process's
 * verified-signature cache (src/tokens/verified-tokens.ts), not an RS256 verification.
 */
export function introspectionOnly(kind: 'hit' | 'miss'): Scenario {
  return {
    ...introspection, name: `introspection-${kind}`,
    mix: kind === 'hit' ? [['valid', 100]] : [['revoked', 100]],
    describe: kind === 'hit'
      ? 'POST /introspect, valid tokens only: cache hits (decode, one MGET, the cached answer)'
      : 'POST /introspect, revoked tokens only: answer-cache misses (decode, one MGET, the signature check: an RS256 verification once per token and process, then the verified-signature cache; inactive answer)',
  } as Scenario;
}

/** Cache hits asked for signed answers (RFC 9701): the same work plus one RS256 signature in the pool. */
export function introspectionJwt(): Scenario {
  const base = introspectionOnly('hit');
  return {
    ...base, name: 'introspection-hit-jwt',
    describe: 'POST /introspect with Accept: application/token-introspection+jwt, valid tokens only: cache hits answered as RS256-signed JWTs',
    async prepare(t: Target, opts: Opts): Promise<Prepared> {
      const p = await base.prepare.call(base, t, opts);
      (p.fixtures as Fx).jwt = true;
      return p;
    },
  };
}

/**
 * Cache hits of DPoP-bound tokens (cnf.jkt, RFC 9449): the same work, the answer carrying cnf and
 * token_type DPoP. Issue 31: within 5% of a bearer token's cost. The tokens come from client_credentials
 * with a proof each (the exchanger's single audience is the resource servers' own).
 */
export function introspectionDpop(kind: 'hit' | 'miss'): Scenario {
  const base = introspectionOnly(kind);
  return {
    ...base, name: `introspection-${kind}-dpop`,
    describe: `${base.describe}; DPoP-bound tokens`,
    async prepare(t: Target, opts: Opts): Promise<Prepared> {
      const p = await base.prepare.call(base, t, opts);
      const fx = p.fixtures as Fx;
      const ex = t.bootstrap!.clients.exchanger;
      const n = num(opts, 'tokens', 300);
      // As many tokens as the bearer variant uses for this kind (its revoked tokens are an eighth of --tokens).
      const count = kind === 'hit' ? n : fx.bodies.revoked.length;
      const proofs = dpopProofs(`${t.bootstrap!.issuer}/token`, count);
      const tokens: string[] = [];
      for (const proof of proofs) {
        const r = await postForm(`${t.url}/token`, { grant_type: 'client_credentials' }, basic(ex.client_id, ex.client_secret), { dpop: proof });
        if (r.json?.token_type !== 'DPoP') throw new Unavailable(`no DPoP-bound token: ${r.status} ${r.text.slice(0, 200)}`);
        tokens.push(String(r.json.access_token));
      }
      if (kind === 'miss') await revokeAll(t, ex, tokens);
      const check = await postForm(t.url + fx.path, { token: tokens[0]! }, fx.auths[0]);
      if (kind === 'hit' && check.json?.token_type !== 'DPoP') throw new Unavailable(`introspection of a bound token: ${check.text.slice(0, 200)}`);
      const bodies = tokens.map((tok) => new URLSearchParams({ token: tok }).toString());
      if (kind === 'hit') fx.bodies.valid = bodies; else fx.bodies.revoked = bodies;
      p.notes.push(`${count} DPoP-bound tokens (client_credentials with a proof each) replace the ${kind === 'hit' ? 'valid' : 'revoked'} ones`);
      return p;
    },
  };
}

export const introspection: Scenario & { mix?: Array<[Kind, number]> } = {
  name: 'introspection',
  unit: 'req/s', reqsPerUnit: 1, start: 1000, factor: 1.6,
  sloMs: 20,
  describe: 'POST /introspect from several resource-server clients; 80% valid, 10% revoked, 10% expired tokens',

  async prepare(t: Target, opts: Opts): Promise<Prepared> {
    if (!t.peer && !t.bootstrap) throw new Unavailable('no bootstrap clients');
    const n = num(opts, 'tokens', 300);
    const notes: string[] = [];
    const path = introspectPath(t);
    let clients: Cred[];
    if (t.peer) clients = t.peer.rs;
    else {
      clients = [t.bootstrap!.clients.resource_server];
      const extra = num(opts, 'rs-clients', 2);
      const tag = stamp();
      for (let i = 0; i < extra; i++) {
        try {
          const c = cliJson(['clients', 'create', '--tenant', t.bootstrap!.tenant_id, '--name', `perf-rs-${i}-${tag}`, '--grant-types', 'client_credentials',
            '--introspect', '--audience', t.bootstrap!.clients.resource_server.audience, '--strict', '--json']);
          if (c?.client_id && c?.client_secret) clients.push({ client_id: c.client_id, client_secret: c.client_secret });
        } catch (e) { notes.push(`extra resource-server client not created: ${(e as Error).message}`); break; }
      }
    }
    const { valid, revoked, via } = await makeTokens(t, n);
    const probe = (tok: string) => postForm(t.url + path, { token: tok }, basic(clients[0]!.client_id, clients[0]!.client_secret));
    let expired: string[] = [];
    if (!this.mix || this.mix.some(([k]) => k === 'expired')) try {
      expired = await expiredTokens(t, Math.max(10, n / 8), stamp(), async (tok) => (await probe(tok)).json?.active === false);
    } catch (e) { notes.push(`NO EXPIRED TOKENS: ${(e as Error).message}`); }
    const needSub = !t.peer;
    // Calibration per client: drop a client that does not see valid tokens as active (e.g. audience).
    const calibration: Record<string, string> = {};
    const kept: Cred[] = [];
    for (const c of clients) {
      const auth = basic(c.client_id, c.client_secret);
      const row: string[] = [];
      let validOk = true;
      for (const [kind, list] of [['valid', valid], ['revoked', revoked], ['expired', expired]] as Array<[Kind, string[]]>) {
        if (!list.length) continue;
        const r = await postForm(t.url + path, { token: list[0]! }, auth);
        const bad = classify(kind, r.status, r.text, needSub);
        row.push(`${kind}: ${bad === null ? 'ok' : `WRONG ${bad}`}`);
        if (kind === 'valid' && bad !== null) validOk = false;
      }
      calibration[c.client_id] = row.join(', ');
      if (validOk) kept.push(c); else notes.push(`client ${c.client_id} dropped: valid tokens not active for it`);
    }
    if (!kept.length) throw new Unavailable(`introspection does not answer valid tokens as active: ${JSON.stringify(calibration)}`);
    let mix: Array<[Kind, number]> = [['valid', 80], ['revoked', 10]];
    if (expired.length) mix.push(['expired', 10]);
    if (this.mix) mix = this.mix;
    const body = (tok: string) => new URLSearchParams({ token: tok }).toString();
    notes.push(`${valid.length} valid tokens (${via}), ${revoked.length} revoked, ${expired.length} expired; ${kept.length} resource-server clients`);
    say(notes[notes.length - 1]!);
    const fx: Fx = {
      path, needSub, mix,
      auths: kept.map((c) => basic(c.client_id, c.client_secret)),
      bodies: { valid: valid.map(body), revoked: revoked.map(body), expired: expired.map(body) },
    };
    return { fixtures: fx, calibration, notes };
  },

  client(fx: Fx, check: Checker): ReqSpec[] {
    const pick = picker(fx.mix);
    return [{
      method: 'POST', path: fx.path,
      setupRequest(req, ctx) {
        const kind = pick();
        ctx.kind = kind;
        check.sent(kind);
        req.headers = { 'content-type': 'application/x-www-form-urlencoded', accept: fx.jwt ? 'application/token-introspection+jwt' : 'application/json', authorization: rnd(fx.auths) };
        req.body = rnd(fx.bodies[kind]);
        return req;
      },
      onResponse(status, body, ctx, h) {
        if (status === 503) { check.shedOne(); if (!header(h, 'retry-after').length) check.note('503 without Retry-After'); return; }
        const bad = classify(ctx.kind, status, fx.jwt && status === 200 ? insideJwt(body) : body, fx.needSub);
        if (bad === null) check.ok(); else check.miss(ctx.kind, bad);
      },
    }];
  },
};
