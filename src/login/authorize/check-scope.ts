import type { Client } from '../../clients/model.js';
import { param, RedirectableError, type Query } from './types.js';

/**
 * Step 4: scope is required; scopes the client may not have are dropped (RFC 6749 3.3 lets the server
 * grant less), and asking only for scopes it may not have is invalid_scope.
 */
export function checkScope(client: Client, q: Query): string[] {
  const raw = param(q, 'scope', (m) => new RedirectableError('invalid_request', m));
  if (raw === undefined) throw new RedirectableError('invalid_request', 'The scope parameter is required (use "openid" for an ID token).');
  const wanted = [...new Set(raw.split(' ').filter(Boolean))];
  const granted = wanted.filter((s) => client.scopes.includes(s));
  if (granted.length === 0) throw new RedirectableError('invalid_scope', 'None of the requested scopes is allowed for this application.');
  return granted;
}
