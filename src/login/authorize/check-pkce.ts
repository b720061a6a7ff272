import type { Client } from '../../clients/model.js';
import { param, RedirectableError, type Query } from './types.js';

const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/**
 * Step 5: PKCE (RFC 7636) with S256 only. Public clients must use it (RFC 9700 2.1.1); confidential
 * clients may. A challenge is 43 base64url characters (a SHA-256 digest).
 */
export function checkPkce(client: Client, q: Query, required = client.authMethod === 'none'): string | undefined {
  const bad = (m: string) => new RedirectableError('invalid_request', m);
  const challenge = param(q, 'code_challenge', bad);
  const method = param(q, 'code_challenge_method', bad);
  if (challenge === undefined) {
    if (method !== undefined) throw bad('code_challenge_method without code_challenge.');
    if (required) throw bad('PKCE (code_challenge with S256) is required for this application.');
    return undefined;
  }
  if ((method ?? 'plain') !== 'S256') throw bad('Only code_challenge_method=S256 is supported.');
  if (!CHALLENGE.test(challenge)) throw bad('The code_challenge must be a base64url SHA-256 digest (43 characters).');
  return challenge;
}
