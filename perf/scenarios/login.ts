// The end-user login flow, five requests per login on one connection:
//   1 GET /authorize (Accept: application/json)  2 POST /email-code/generate  3 POST /email-code/verify
//   (code read from the harness's SMTP sink)  4 GET /authorize?prompt=none with the session cookie
//   (302 with ?code=)  5 POST /token authorization_code + PKCE.
// A login counts when step 5 returns an access token; per-login latency is step 1 sent to step 5 answered.
import { createHash, randomBytes } from 'node:crypto';
import { header, safeJson, type Checker, type ReqSpec } from '../lib/checker.js';
import { codes } from '../lib/smtp-sink.js';
import type { Target } from '../lib/target.js';
import { basic, http, stamp } from '../lib/util.js';
import { Unavailable, type Prepared, type Scenario } from './types.js';

interface Fx { clientId: string; auth: string; redirectUri: string; run: string }

let counter = 0;

export const login: Scenario = {
  name: 'login',
  unit: 'logins/s', reqsPerUnit: 5, start: 25, factor: 1.5, smtp: true,
  sloMs: 300,
  describe: 'five-request login flow per login (authorize, email-code generate, verify, authorize prompt=none, token)',

  async prepare(t: Target): Promise<Prepared> {
    if (t.peer) throw new Unavailable('login is measured on svc only');
    if (!t.bootstrap) throw new Unavailable('no bootstrap clients');
    const web = t.bootstrap.clients.web;
    const redirectUri = web.redirect_uris[0];
    if (!redirectUri) throw new Unavailable('web client has no redirect_uri');
    const q = new URLSearchParams({ response_type: 'code', client_id: web.client_id, redirect_uri: redirectUri, scope: 'openid email', state: 's', nonce: 'n', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' });
    const r = await http(`${t.url}/authorize?${q}`, { headers: { accept: 'application/json' } });
    if (r.status !== 200) throw new Unavailable(`GET /authorize -> ${r.status} ${r.text.slice(0, 200)}`);
    return {
      fixtures: { clientId: web.client_id, auth: basic(web.client_id, web.client_secret), redirectUri, run: stamp().replace(/[^0-9]/g, '') } satisfies Fx,
      calibration: { authorize: `ok ${r.status}` },
      notes: [`client ${web.client_id}, redirect_uri ${redirectUri}; one new e-mail address per login`],
    };
  },

  client(fx: Fx, check: Checker): ReqSpec[] {
    const authorizeQuery = (ctx: any, prompt: boolean) => new URLSearchParams({
      response_type: 'code', client_id: fx.clientId, redirect_uri: fx.redirectUri, scope: 'openid email',
      state: ctx.state, nonce: ctx.state, code_challenge: ctx.challenge, code_challenge_method: 'S256',
      ...(prompt ? { prompt: 'none' } : {}),
    }).toString();
    const fail = (ctx: any, step: string, got: string) => {
      ctx.failed = true;
      check.miss(step, got);
      check.flowFail(`${step}:${got}`);
    };
    const json = { 'content-type': 'application/json', accept: 'application/json' };
    const stepDone = (ctx: any, step: string, status: number, ok: boolean, got: string) => {
      if (status === 503) { ctx.failed = true; check.shedOne(); check.flowFail('shed 503'); return false; }
      if (!ok) { fail(ctx, step, got); return false; }
      check.ok();
      return true;
    };
    return [
      {
        method: 'GET',
        setupRequest(req, ctx) {
          ctx.t0 = performance.now();
          ctx.email = `perf-${fx.run}-${process.pid}-${++counter}@perf.test`;
          ctx.state = randomBytes(9).toString('base64url');
          ctx.verifier = randomBytes(32).toString('base64url');
          ctx.challenge = createHash('sha256').update(ctx.verifier).digest('base64url');
          check.sent('login');
          req.path = `/authorize?${authorizeQuery(ctx, false)}`;
          req.headers = { accept: 'application/json' };
          return req;
        },
        onResponse(status, _body, ctx) { stepDone(ctx, '1 authorize', status, status === 200, String(status)); },
      },
      {
        method: 'POST', path: '/email-code/generate', headers: json,
        setupRequest(req, ctx) {
          if (ctx.failed) return null;
          req.body = JSON.stringify({ email: ctx.email, client_id: fx.clientId });
          return req;
        },
        onResponse(status, _b, ctx) { stepDone(ctx, '2 generate', status, status >= 200 && status < 300, String(status)); },
      },
      {
        method: 'POST', path: '/email-code/verify', headers: json,
        setupRequest(req, ctx) {
          if (ctx.failed) return null;
          const code = codes.get(ctx.email);
          if (!code) { fail(ctx, '3 verify', 'code not in SMTP sink yet'); return null; }
          codes.delete(ctx.email);
          req.body = JSON.stringify({ email: ctx.email, code });
          return req;
        },
        onResponse(status, _b, ctx, h) {
          const cookie = header(h, 'set-cookie').map((c) => c.split(';')[0]!).find((c) => c.startsWith('svc_session='));
          if (stepDone(ctx, '3 verify', status, status >= 200 && status < 300 && !!cookie, cookie ? String(status) : `${status} without svc_session cookie`)) ctx.cookie = cookie;
        },
      },
      {
        method: 'GET',
        setupRequest(req, ctx) {
          if (ctx.failed) return null;
          req.path = `/authorize?${authorizeQuery(ctx, true)}`;
          req.headers = { cookie: ctx.cookie, accept: 'application/json' };
          return req;
        },
        onResponse(status, _b, ctx, h) {
          const loc = header(h, 'location')[0];
          let code: string | null = null;
          let state: string | null = null;
          if (loc) { try { const u = new URL(loc, 'http://x'); code = u.searchParams.get('code'); state = u.searchParams.get('state'); } catch { /* bad location */ } }
          const ok = status === 302 && !!code && state === ctx.state;
          if (stepDone(ctx, '4 authorize prompt=none', status, ok, status !== 302 ? String(status) : !code ? '302 without code' : '302 wrong state')) ctx.code = code;
        },
      },
      {
        method: 'POST', path: '/token',
        setupRequest(req, ctx) {
          if (ctx.failed) return null;
          req.headers = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', authorization: fx.auth };
          req.body = new URLSearchParams({ grant_type: 'authorization_code', code: ctx.code, redirect_uri: fx.redirectUri, code_verifier: ctx.verifier, client_id: fx.clientId }).toString();
          return req;
        },
        onResponse(status, body, ctx) {
          const j = safeJson(body);
          const ok = status === 200 && typeof j?.access_token === 'string' && typeof j?.id_token === 'string';
          if (stepDone(ctx, '5 token', status, ok, status !== 200 ? `${status} ${j?.error ?? ''}`.trim() : 'missing access_token/id_token')) check.flow(performance.now() - ctx.t0);
        },
      },
    ];
  },
};
