import { createHash, randomBytes } from 'node:crypto';
import type { BootstrapResult } from '../../src/bootstrap.js';
import { closeLogin } from '../../src/login/index.js';
import { createLogger } from '../../src/log.js';
import { startSmtpSink, type SmtpSink } from '../../src/mail/dev-sink.js';
import { startEmailWorker, type RunningEmailWorker } from '../../workers/email-worker.js';
import { waitFor } from '../helpers/processes.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { setupTenant } from '../helpers/tokens.js';

export interface LoginEnv { srv: TestServer; sink: SmtpSink; worker: RunningEmailWorker; tenant: BootstrapResult; close(): Promise<void> }

/**
 * A real server on a free port with its own Redis prefix and tenant, an SMTP sink on a free port, and
 * the BullMQ email worker running in this process with the same prefix (so codes arrive in the sink).
 * `env`: more settings of the server (e.g. a shorter device polling interval).
 */
export async function startLoginEnv(env: Record<string, string> = {}): Promise<LoginEnv> {
  const sink = await startSmtpSink();
  const srv = await startTestServer({ ...env, SMTP_URL: `smtp://127.0.0.1:${sink.port}` });
  const worker = await startEmailWorker(srv.config, createLogger('silent'));
  const tenant = await setupTenant(srv, 'login');
  return {
    srv, sink, worker, tenant,
    close: async () => { await worker.close(); await srv.close(); await closeLogin(srv.deps); await sink.close(); },
  };
}

/** Waits for the newest login code mailed to an address. */
export async function codeFor(sink: SmtpSink, email: string, after = 0): Promise<string> {
  let code: string | undefined;
  await waitFor(() => {
    const m = sink.messages.filter((x) => x.to.includes(email.toLowerCase()) || x.to.includes(email));
    if (m.length > after) code = m[m.length - 1]!.code;
    return code !== undefined;
  }, 15_000);
  return code!;
}

export function mailCount(sink: SmtpSink, email: string): number {
  return sink.messages.filter((x) => x.to.includes(email)).length;
}

export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export function uniqueEmail(label = 'user'): string {
  return `${label}-${randomBytes(5).toString('hex')}@example.test`;
}

export function sessionCookieFrom(res: Response): string | undefined {
  return res.headers.getSetCookie().map((c) => c.split(';')[0]!).find((c) => c.startsWith('svc_session='));
}

export function authorizeUrl(base: string, params: Record<string, string>): string {
  return `${base}/authorize?${new URLSearchParams(params)}`;
}

/**
 * The person's part of a code flow, as an API client: from an authorize URL, sign in with an emailed
 * code and come back with the callback URL (code, state, iss). `label` names the made-up address.
 */
export async function signInByEmailCode(env: { srv: TestServer; sink: SmtpSink }, url: URL | string, label = 'user'): Promise<URL> {
  const { srv, sink } = env;
  let res = await fetch(url, { headers: { accept: 'application/json' } });
  const body = await res.json() as { interaction?: string };
  if (!body.interaction) throw new Error(`authorize answered ${res.status}: ${JSON.stringify(body)}`);
  const email = uniqueEmail(label);
  await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, interaction: body.interaction }) });
  res = await fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, code: await codeFor(sink, email), interaction: body.interaction }) });
  const verified = await res.json() as { continue: string };
  res = await fetch(verified.continue, { headers: { cookie: sessionCookieFrom(res)! }, redirect: 'manual' });
  return new URL(res.headers.get('location')!);
}
