import { randomBytes } from 'node:crypto';
import type { BootstrapResult } from '../../src/bootstrap.js';
import type { SmtpSink } from '../../src/mail/dev-sink.js';
import { pkce } from '../login/fixtures.js';
import { waitFor } from '../helpers/processes.js';

// The traffic the fault tests (faults-under-load, faults-workers) run while they break things: six
// loops against one base URL, every answer checked, every non-success counted by phase.
// - introspection of a valid and of a revoked access token; token exchange of each;
// - two loops of the email-code login as an API client performs it (GET /authorize, POST
//   /email-code/generate, the code from the SMTP sink, POST /email-code/verify, GET /authorize
//   prompt=none with the session, POST /token with the authorization code), each with a new address.
// Violations: a revoked token introspected active or exchanged; a 5xx other than 503; an answer slower
// than hangMs; an error answer without the spec's error body (or an HTML page); a code accepted twice.

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const AT = 'urn:ietf:params:oauth:token-type:access_token';

export type Answer = { status: number; body: any; location: URL | undefined; cookie: string | undefined };
type Client = { client_id: string; client_secret: string };

export interface TrafficOptions {
  url: string;
  tenant: BootstrapResult;
  sink: SmtpSink;
  /** A request slower than this is a violation (default 5 s). */
  hangMs?: number;
  /** How long a login waits for its code in the sink (default hangMs). */
  codeWaitMs?: number;
}

const form = (client: Client, f: Record<string, string>): RequestInit => ({
  method: 'POST', body: new URLSearchParams(f),
  headers: { authorization: `Basic ${Buffer.from(`${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
});
const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(body) });

export class FaultTraffic {
  /** Label of the current stage; failures and violations are recorded under it. */
  phase = 'before';
  readonly violations: string[] = [];
  /** `phase | step | status error` -> count, for every answer that is not a success. */
  readonly failures = new Map<string, number>();
  readonly counts = { requests: 0, logins: 0, loginOk: 0, loginFailures: 0, exchanges: 0, introspections: 0, slowestMs: 0 };
  /** Code requests answered 200, by address: each must reach the sink. */
  readonly requested = new Set<string>();
  /** Users created by a login whose verify succeeded: each must reach the webhook receiver. */
  readonly loggedIn = new Set<string>();
  private raceChecks = 0;
  private running = false;
  private loops: Promise<unknown> | undefined;
  private readonly hangMs: number;
  private readonly codeWaitMs: number;
  valid = '';
  revoked = '';

  constructor(private readonly o: TrafficOptions) {
    this.hangMs = o.hangMs ?? 5_000;
    this.codeWaitMs = o.codeWaitMs ?? this.hangMs;
  }

  /** Issues a valid and a revoked access token, then starts the loops. */
  async start(): Promise<void> {
    const ex = this.o.tenant.clients.exchanger;
    const issue = async () => ((await (await fetch(`${this.o.url}/token`, form(ex, { grant_type: 'client_credentials', scope: 'read' }))).json()) as any).access_token as string;
    this.valid = await issue();
    this.revoked = await issue();
    if ((await fetch(`${this.o.url}/revoke`, form(ex, { token: this.revoked }))).status !== 200) throw new Error('revocation failed');
    this.running = true;
    const loop = async (fn: () => Promise<void>) => { while (this.running) await fn(); };
    const c = this.counts;
    this.loops = Promise.all([
      loop(async () => { const a = await this.introspect(this.revoked); c.introspections++; if (a?.body?.active === true) this.violations.push(`${this.phase}: revoked token introspected active`); }),
      loop(async () => { await this.introspect(this.valid); c.introspections++; }),
      loop(async () => { const a = await this.exchange(this.revoked); c.exchanges++; if (a?.status === 200 || a?.body?.access_token) this.violations.push(`${this.phase}: token issued from a revoked subject token`); }),
      loop(async () => { await this.exchange(this.valid); c.exchanges++; }),
      loop(async () => { c.logins++; if (await this.login()) c.loginOk++; else c.loginFailures++; }),
      loop(async () => { c.logins++; if (await this.login()) c.loginOk++; else c.loginFailures++; }),
    ]);
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loops;
  }

  note(step: string, status: number | string, error = ''): void {
    const k = `${this.phase} | ${step} | ${status} ${error}`.trim();
    this.failures.set(k, (this.failures.get(k) ?? 0) + 1);
  }

  /** The failures table, one line each. */
  report(): string {
    return [...this.failures].map(([k, n]) => `  ${k}: ${n}`).join('\n');
  }

  /** One request with a time bound; checks the answer's shape; undefined when no answer came. */
  async call(step: string, url: string, init: RequestInit & { ok: (a: Answer) => boolean }): Promise<Answer | undefined> {
    const started = Date.now();
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(this.hangMs) });
      text = await res.text();
    } catch (err) {
      const e = err as Error;
      if (e.name === 'TimeoutError') this.violations.push(`${this.phase}: ${step} hung over ${this.hangMs} ms`);
      // A process killed with the request on it resets the connection: no answer, counted.
      this.note(step, 'no answer', e.name === 'TypeError' ? String((e.cause as { code?: string })?.code ?? e.message) : e.name);
      return undefined;
    }
    const ms = Date.now() - started;
    this.counts.requests++;
    this.counts.slowestMs = Math.max(this.counts.slowestMs, ms);
    let body: any = null;
    try { body = JSON.parse(text); } catch { /* not JSON */ }
    const loc = res.headers.get('location');
    const a: Answer = {
      status: res.status, body, location: loc ? new URL(loc, this.o.url) : undefined,
      cookie: res.headers.getSetCookie().map((c) => c.split(';')[0]!).find((c) => c.startsWith('svc_session=')),
    };
    if (init.ok(a)) return a;
    if (res.status >= 500 && res.status !== 503) this.violations.push(`${this.phase}: ${step} answered ${res.status} ${text.slice(0, 200)}`);
    const html = (res.headers.get('content-type') ?? '').startsWith('text/html');
    const error = typeof body?.error === 'string' ? body.error : a.location?.searchParams.get('error') ?? (html ? 'html page' : '');
    if (res.status >= 400 && !(typeof body?.error === 'string' && typeof body?.error_description === 'string') && !html) {
      this.violations.push(`${this.phase}: ${step} ${res.status} without the spec's error body: ${text.slice(0, 200)}`);
    }
    this.note(step, res.status, error);
    return a;
  }

  introspect(token: string): Promise<Answer | undefined> {
    return this.call('introspect', `${this.o.url}/introspect`, { ...form(this.o.tenant.clients.resource_server, { token }), ok: (a) => a.status === 200 && a.body?.active === (token === this.valid) });
  }

  exchange(token: string): Promise<Answer | undefined> {
    return this.call('exchange', `${this.o.url}/token`, {
      ...form(this.o.tenant.clients.exchanger, { grant_type: EXCHANGE, subject_token: token, subject_token_type: AT }),
      ok: (a) => (token === this.valid ? a.status === 200 : a.status === 400 && a.body?.error === 'invalid_grant'),
    });
  }

  /** The five-request login of a new address; resolves to the new user's id, or undefined if a step failed. */
  async login(): Promise<string | undefined> {
    const base = this.o.url;
    const web = this.o.tenant.clients.web;
    const redirectUri = web.redirect_uris[0]!;
    const email = `f-${randomBytes(6).toString('hex')}@example.test`;
    const { verifier, challenge } = pkce();
    const params = { response_type: 'code', client_id: web.client_id, redirect_uri: redirectUri, scope: 'openid email', state: 's', nonce: 'n', code_challenge: challenge, code_challenge_method: 'S256' };
    const url = `${base}/authorize?${new URLSearchParams(params)}`;
    const a1 = await this.call('authorize', url, { headers: { accept: 'application/json' }, ok: (a) => a.status === 200 && a.body?.login_required === true });
    if (a1?.status !== 200) return undefined;
    const a2 = await this.call('generate', `${base}/email-code/generate`, { ...json({ email, client_id: web.client_id }), ok: (a) => a.status === 200 && a.body?.sent === true });
    if (a2?.status !== 200) return undefined;
    this.requested.add(email);
    let code: string | undefined;
    await waitFor(() => { code = this.o.sink.messages.find((m) => m.to.includes(email))?.code; return code !== undefined; }, this.codeWaitMs, 20).catch(() => {});
    if (!code) { this.note('mail', `not within ${this.codeWaitMs} ms`); return undefined; }
    // While the per-IP failure budget allows (100 per 15 min), two verifies of the same code race: at most one may win.
    const race = this.raceChecks++ < 60;
    const verifies = await Promise.all((race ? [0, 1] : [0]).map(() => this.call('verify', `${base}/email-code/verify`, {
      ...json({ email, code }), ok: (a) => a.status === 200 || (race && a.status === 400 && a.body?.error === 'invalid_request'),
    })));
    const won = verifies.filter((v) => v?.status === 200);
    if (won.length > 1) this.violations.push(`${this.phase}: one code accepted ${won.length} times`);
    if (won.length === 0 && verifies.some((v) => v?.status === 400)) this.note('verify', 400, 'invalid_request');
    const v = won[0];
    if (!v?.cookie) return undefined;
    const sub = String(v.body.sub);
    this.loggedIn.add(sub);
    const a4 = await this.call('authorize prompt=none', `${url}&prompt=none`, { headers: { accept: 'application/json', cookie: v.cookie }, ok: (a) => a.status === 302 && !!a.location?.searchParams.get('code') });
    const authCode = a4?.location?.searchParams.get('code');
    if (!authCode) return undefined;
    const a5 = await this.call('token', `${base}/token`, { ...form(web, { grant_type: 'authorization_code', code: authCode, redirect_uri: redirectUri, code_verifier: verifier }), ok: (a) => a.status === 200 && typeof a.body?.access_token === 'string' });
    return a5?.status === 200 ? sub : undefined;
  }

  /** Race checks done so far (two verifies of one code). */
  get races(): number { return Math.min(this.raceChecks, 60); }
}

/** The users named by `user.created` deliveries a receiver got. */
export function deliveredUsers(received: Array<{ body: string }>): Set<string> {
  return new Set(received.map((r) => { try { const e = JSON.parse(r.body); return e.event === 'user.created' ? String(e.data.user_id) : ''; } catch { return ''; } }));
}
