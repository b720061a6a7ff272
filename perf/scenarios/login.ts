// The end-user login flow, five requests per login, run open loop (perf/lib/openloop.ts: logins arrive
// at a fixed rate, each runs its requests in sequence over a keep-alive agent):
//   1 GET /authorize (Accept: application/json)  2 POST /email-code/generate  3 POST /email-code/verify
//   (with the code, awaited until the harness's SMTP sink receives the mail, at most CODE_WAIT_MS)
//   4 GET /authorize?prompt=none with the session cookie (302 with ?code=)  5 POST /token
//   authorization_code + PKCE.
// A login counts when step 5 returns an access token; per-login latency is from the login's scheduled
// arrival to step 5 answered (so it includes the wait for the mail).
import { createHash, randomBytes } from 'node:crypto';
import { header, safeJson, type Checker } from '../lib/checker.js';
import { RequestFailure, type Answer, type Flow } from '../lib/openloop.js';
import { waitForCode } from '../lib/smtp-sink.js';
import type { Target } from '../lib/target.js';
import { basic, http, stamp } from '../lib/util.js';
import { Unavailable, type Prepared, type Scenario } from './types.js';

interface Fx { clientId: string; auth: string; redirectUri: string; run: string }
interface Login { email: string; state: string; verifier: string; challenge: string }

/** How long a login waits for its code to reach the SMTP sink before it counts as failed at step 3. */
const CODE_WAIT_MS = Number(process.env.PERF_CODE_WAIT_MS ?? 5000);

let counter = 0;
/**
 * PERF_LOGIN_USERS=N: addresses cycle over N users per load process, so after the first N logins every
 * login is a returning user's (the default, a new address per login, measures first logins). Keep N at
 * least a fifth of the logins of the run: an address gets 5 codes per 10 minutes.
 */
const RETURNING_USERS = Number(process.env.PERF_LOGIN_USERS ?? 0);

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

  flow(fx: Fx, check: Checker): Flow {
    const authorizeQuery = (st: Login, prompt: boolean) => new URLSearchParams({
      response_type: 'code', client_id: fx.clientId, redirect_uri: fx.redirectUri, scope: 'openid email',
      state: st.state, nonce: st.state, code_challenge: st.challenge, code_challenge_method: 'S256',
      ...(prompt ? { prompt: 'none' } : {}),
    }).toString();
    const json = { 'content-type': 'application/json', accept: 'application/json' };
    /** Checks one answer; false (and the login counted as failed) unless it is the expected one. */
    const expect = (step: string, a: Answer, ok: boolean, got: string): boolean => {
      if (a.status === 503) { check.shedOne(); check.flowFail(`${step}:shed 503`); if (!a.headers['retry-after']) check.note('503 without Retry-After'); return false; }
      if (a.status === 429 && a.headers['retry-after']) { check.limited(); check.flowFail(`${step}:429 rate limited`); return false; }
      if (!ok) { check.miss(step, got); check.flowFail(`${step}:${got}`); return false; }
      check.ok();
      return true;
    };
    return async (rawSend, t0) => {
      // Per-step latency (issue 19 item 4): each request's own time, reported as "<step> p50/p95/max ms".
      const send: typeof rawSend = async (...args) => {
        const s0 = performance.now();
        const a = await rawSend(...args);
        check.sample(step, performance.now() - s0);
        return a;
      };
      const st: Login = {
        email: RETURNING_USERS > 0 ? `perf-${fx.run}-${process.pid}-r${++counter % RETURNING_USERS}@perf.test` : `perf-${fx.run}-${process.pid}-${++counter}@perf.test`,
        state: randomBytes(9).toString('base64url'),
        verifier: randomBytes(32).toString('base64url'),
        challenge: '',
      };
      st.challenge = createHash('sha256').update(st.verifier).digest('base64url');
      check.sent('login');
      let step = '1 authorize';
      try {
        let a = await send('GET', `/authorize?${authorizeQuery(st, false)}`, { accept: 'application/json' });
        if (!expect(step, a, a.status === 200, String(a.status))) return;

        step = '2 generate';
        a = await send('POST', '/email-code/generate', json, JSON.stringify({ email: st.email, client_id: fx.clientId }));
        if (!expect(step, a, a.status >= 200 && a.status < 300, String(a.status))) return;

        step = '3 verify';
        const w0 = performance.now();
        const code = await waitForCode(st.email, CODE_WAIT_MS);
        if (!code) { check.flowFail(`${step}:code not received in ${CODE_WAIT_MS / 1000} s`); return; }
        check.sample('mail wait', performance.now() - w0);
        a = await send('POST', '/email-code/verify', json, JSON.stringify({ email: st.email, code }));
        const cookie = header(a.headers as Record<string, string | string[]>, 'set-cookie').map((c) => c.split(';')[0]!).find((c) => c.startsWith('svc_session='));
        if (!expect(step, a, a.status >= 200 && a.status < 300 && !!cookie, cookie ? String(a.status) : `${a.status} without svc_session cookie`)) return;

        step = '4 authorize prompt=none';
        a = await send('GET', `/authorize?${authorizeQuery(st, true)}`, { cookie: cookie!, accept: 'application/json' });
        const loc = header(a.headers as Record<string, string | string[]>, 'location')[0];
        let authCode: string | null = null;
        let state: string | null = null;
        if (loc) { try { const u = new URL(loc, 'http://x'); authCode = u.searchParams.get('code'); state = u.searchParams.get('state'); } catch { /* bad location */ } }
        if (!expect(step, a, a.status === 302 && !!authCode && state === st.state, a.status !== 302 ? String(a.status) : !authCode ? '302 without code' : '302 wrong state')) return;

        step = '5 token';
        a = await send('POST', '/token', { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', authorization: fx.auth },
          new URLSearchParams({ grant_type: 'authorization_code', code: authCode!, redirect_uri: fx.redirectUri, code_verifier: st.verifier, client_id: fx.clientId }).toString());
        const j = safeJson(a.body);
        if (!expect(step, a, a.status === 200 && typeof j?.access_token === 'string' && typeof j?.id_token === 'string', a.status !== 200 ? `${a.status} ${j?.error ?? ''}`.trim() : 'missing access_token/id_token')) return;
        check.flow(performance.now() - t0);
      } catch (e) {
        if (e instanceof RequestFailure && e.kind === 'closed') return;
        check.flowFail(`${step}:${e instanceof RequestFailure ? e.kind : 'error'}`);
      }
    };
  },
};
