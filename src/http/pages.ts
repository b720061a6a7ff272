import type { ErrorReply } from '../errors.js';
import { escapeHtml } from './html.js';
import type { Reply } from './types.js';

/** The pages' stylesheet (served by the login routes): the only thing a page loads. */
const STYLESHEET = '/login/assets/login.css';

/**
 * Security headers of every page the service serves, error pages included: no script at all, styles
 * only from us, forms only to us (and, on pages that end in a redirect to the client, to that client's
 * origin, since Chromium applies form-action to the redirects that follow a submission), never framed,
 * never cached.
 */
export function pageHeaders(formTargets: string[] = [], scripts = false): Record<string, string> {
  const extra = formTargets.length ? ` ${[...new Set(formTargets)].join(' ')}` : '';
  // Pages with passkeys load one script file from us (no inline script) that calls our own JSON endpoints.
  const script = scripts ? " script-src 'self'; connect-src 'self';" : '';
  return {
    'Content-Security-Policy': `default-src 'none';${script} style-src 'self'; img-src 'self'; form-action 'self'${extra}; frame-ancestors 'none'; base-uri 'none'`,
    'X-Frame-Options': 'DENY',
    'Cache-Control': 'no-store',
    Pragma: 'no-cache',
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
  };
}

/** A whole page: `body` is HTML already escaped by the caller; the title is escaped here. */
export function page(title: string, body: string, opts: { status?: number; cookies?: string[] | undefined; formTargets?: string[]; scripts?: string[] } = {}): Reply {
  const scripts = (opts.scripts ?? []).map((src) => `<script src="${escapeHtml(src)}" defer></script>`).join('');
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>${escapeHtml(title)}</title><link rel="stylesheet" href="${STYLESHEET}">${scripts}</head>` +
    `<body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`;
  return { status: opts.status ?? 200, type: 'text/html; charset=utf-8', headers: pageHeaders(opts.formTargets, scripts !== ''), cookies: opts.cookies, body: html };
}

/** The one error page: what went wrong, and where to go from here. */
export function errorPage(status: number, description: string): Reply {
  return page('Something went wrong', `<p role="alert">${escapeHtml(description)}</p><p>Return to the application you came from and try again.</p>`, { status });
}

/**
 * An error as the client asked for it: the spec's JSON error body, or the error page. Either way
 * never cached, and with the error's own headers (Retry-After, Allow, WWW-Authenticate).
 */
export function errorReply(out: ErrorReply, asPage: boolean): Reply {
  if (!asPage) return { status: out.status, type: 'application/json', headers: { 'Cache-Control': 'no-store', ...out.headers }, body: out.body };
  const p = errorPage(out.status, String(out.body.error_description));
  return { ...p, headers: { ...p.headers, ...out.headers } };
}
