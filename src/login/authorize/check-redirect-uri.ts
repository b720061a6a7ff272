import { redirectUriRegistered } from '../../clients/metadata.js';
import type { Client } from '../../clients/model.js';
import { PageError, param, type Query } from './types.js';

/**
 * Step 2: the redirect URI is one the client registered, compared as exact strings (RFC 9700 2.1,
 * no pattern or prefix matching), except for the port of a loopback one (RFC 8252 7.3). It may be
 * omitted only when the client registered exactly one.
 */
export function checkRedirectUri(client: Client, q: Query): { redirectUri: string; given: boolean } {
  const uri = param(q, 'redirect_uri', (m) => new PageError(m));
  if (uri === undefined) {
    if (client.redirectUris.length === 1) return { redirectUri: client.redirectUris[0]!, given: false };
    throw new PageError('The request has no redirect_uri and the application registered more than one.');
  }
  if (!redirectUriRegistered(client.redirectUris, uri)) throw new PageError('The redirect URI is not registered for this application.');
  return { redirectUri: uri, given: true };
}
