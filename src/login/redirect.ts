import type { Reply } from '../http/types.js';

/**
 * Sends the browser back to the client's (validated) redirect URI with RFC 6749 4.1.2 parameters and
 * the issuer (RFC 9207). 303 after a form POST so the browser follows with GET.
 */
export function redirectTo(redirectUri: string, issuer: string, params: Record<string, string | undefined>, status: 302 | 303 = 302): Reply {
  const u = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, v);
  u.searchParams.set('iss', issuer);
  return { status, headers: { Location: u.toString(), 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' } };
}

export function originOf(uri: string): string {
  try {
    const u = new URL(uri);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : '';
  } catch { return ''; }
}
