// Real tokens for the scenarios, obtained through the target's own endpoints (and svc's CLI for the
// short-lived client), never forged. Shared by token-exchange, introspection and client-credentials.
import { cliJson, type Target } from '../lib/target.js';
import { basic, pool, postForm, say, sleep } from '../lib/util.js';
import { Unavailable } from './types.js';

export interface Cred { client_id: string; client_secret: string }

export const TE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const AT_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

export function tokenPath(t: Target): string { return t.peer ? t.peer.tokenPath : '/token'; }
export function introspectPath(t: Target): string { return t.peer ? t.peer.introspectPath : '/introspect'; }
export function revokePath(t: Target): string { return t.peer ? t.peer.revokePath : '/revoke'; }

export function ccBody(t: Target, scope?: string): string {
  const f: Record<string, string> = { grant_type: 'client_credentials' };
  const s = scope ?? t.peer?.scope;
  if (s) f.scope = s;
  return new URLSearchParams(f).toString();
}

/** A client_credentials access token of `c`; throws Unavailable with the answer when refused. */
export async function ccToken(t: Target, c: Cred, scope?: string): Promise<string> {
  const s = scope ?? t.peer?.scope;
  const r = await postForm(t.url + tokenPath(t), { grant_type: 'client_credentials', ...(s ? { scope: s } : {}) }, basic(c.client_id, c.client_secret));
  if (r.status !== 200 || typeof r.json?.access_token !== 'string') {
    throw new Unavailable(`${t.name}: client_credentials for ${c.client_id} -> ${r.status} ${r.text.slice(0, 200)}`);
  }
  return r.json.access_token as string;
}

export async function ccTokens(t: Target, c: Cred, n: number, scope?: string): Promise<string[]> {
  return pool(Array.from({ length: n }, (_, i) => i), 16, () => ccToken(t, c, scope));
}

export async function revokeAll(t: Target, c: Cred, tokens: string[]): Promise<void> {
  await pool(tokens, 16, async (tok) => {
    const r = await postForm(t.url + revokePath(t), { token: tok }, basic(c.client_id, c.client_secret));
    if (r.status !== 200) throw new Unavailable(`${t.name}: revoke -> ${r.status} ${r.text.slice(0, 200)}`);
  });
}

/**
 * A client whose access tokens live 1 s: svc's `clients create --access-token-ttl 1` (CLI), or the
 * peer's preconfigured short client.
 */
export function shortClient(t: Target, name: string): Cred {
  if (t.peer) return t.peer.short;
  const b = t.bootstrap!;
  const c = cliJson(['clients', 'create', '--tenant', b.tenant_id, '--name', name,
    '--grant-types', `client_credentials,${TE_GRANT}`, '--access-token-ttl', '1', '--json']);
  if (!c?.client_id || !c?.client_secret) throw new Error('clients create printed no client_id/client_secret');
  return { client_id: c.client_id, client_secret: c.client_secret };
}

/**
 * Tokens of a 1-second client, waited on until `probe` says they are refused (2 s first, then every
 * 5 s, at most `maxWaitS`), so a server's clock leeway cannot turn "expired" into "valid".
 */
export async function expiredTokens(t: Target, n: number, runTag: string, probe: (tok: string) => Promise<boolean>, maxWaitS = 70): Promise<string[]> {
  const c = shortClient(t, `perf-short-${runTag}`);
  const toks = await ccTokens(t, c, n);
  await sleep(2000);
  const end = Date.now() + maxWaitS * 1000;
  while (!(await probe(toks[0]!))) {
    if (Date.now() > end) throw new Unavailable(`${t.name}: tokens with a 1 s lifetime still accepted after ${maxWaitS} s`);
    say('expired-token probe still accepted; waiting 5 s (server leeway?)');
    await sleep(5000);
  }
  return toks;
}
