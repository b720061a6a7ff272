import type { Deps } from '../deps.js';
import type { HttpRequest } from '../http/request.js';
import { depsFor } from '../request-deps.js';
import { MailQueue } from '../mail/queue.js';
import { deriveKey } from '../tokens/secrets.js';

/** What the login routes share within one HTTP process: derived keys and the (lazily opened) mail queue. */
export interface LoginContext {
  deps: Deps;
  /** HMAC key for one-time code hashes. */
  codeKey: Buffer;
  /** HMAC key binding CSRF tokens to the browser's CSRF cookie. */
  csrfKey: Buffer;
  secureCookies: boolean;
  mail(): MailQueue;
}

// Keyed by the process's Deps so each server (tests run several per process) has its own. The mail
// queue sends over the process's job producers (deps.jobs), which the lifecycle closes at shutdown.
const contexts = new WeakMap<Deps, LoginContext>();

export function loginContext(deps: Deps): LoginContext {
  let ctx = contexts.get(deps);
  if (!ctx) {
    let mail: MailQueue | undefined;
    ctx = {
      deps,
      codeKey: deriveKey(deps.config.keyEncryptionKey, 'login-codes'),
      csrfKey: deriveKey(deps.config.keyEncryptionKey, 'login-csrf'),
      secureCookies: deps.config.issuer.startsWith('https:'),
      mail: () => (mail ??= new MailQueue(deps.jobs, deps.config.keyEncryptionKey, deps.trace)),
    };
    Object.defineProperty(ctx, 'close', { value: async () => { mail = undefined; contexts.delete(deps); } });
    contexts.set(deps, ctx);
  }
  return ctx;
}

/** Releases the login feature's own connections now (the lifecycle does it at shutdown anyway). */
export async function closeLogin(deps: Deps): Promise<void> {
  const ctx = contexts.get(deps) as (LoginContext & { close?: () => Promise<void> }) | undefined;
  await ctx?.close?.();
}

/** A request's deps and login context: the process's, or a sampled request's view (src/request-deps.ts). */
export interface LoginScope { deps: Deps; ctx: LoginContext }

/**
 * Per request, the routes' scope: the shared one, or for a sampled request a view whose clients make
 * their spans under it (with its own login context, so mail jobs carry the trace too).
 */
export function loginScopes(deps: Deps): (req: HttpRequest) => LoginScope {
  const shared: LoginScope = { deps, ctx: loginContext(deps) };
  return (req) => { const d = depsFor(deps, req); return d === deps ? shared : { deps: d, ctx: loginContext(d) }; };
}
