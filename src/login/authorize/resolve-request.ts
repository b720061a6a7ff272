import type { Deps } from '../../deps.js';
import { OAuthError } from '../../errors.js';
import { checkClient } from './check-client.js';
import { loadPushed } from './pushed.js';
import { verifyRequestObject } from './request-object.js';
import { PageError, param, type Query } from './types.js';

/**
 * Step 0 of /authorize: the request's parameters, from a pushed request (request_uri, RFC 9126 4) or a
 * request object (request, RFC 9101), or as sent. Failures are shown as a page: until the request is
 * read there is no trusted redirect URI. `pushedId` names the pushed request, spent when its code is issued.
 */
export async function resolveRequest(deps: Deps, q: Query): Promise<{ q: Query; pushedId?: string }> {
  const bad = (m: string) => new PageError(m);
  const uri = param(q, 'request_uri', bad);
  if (uri !== undefined) {
    const pushed = await loadPushed(deps.redis, uri);
    if (!pushed) throw new PageError('The request_uri is unknown, expired or already used: start the sign-in again from the application.', 400, 'invalid_request_uri');
    if (param(q, 'client_id', bad) !== pushed.clientId) throw new PageError('The request_uri was issued to another client.', 400, 'invalid_request_uri');
    return { q: pushed.params, pushedId: pushed.id };
  }
  const request = param(q, 'request', bad);
  if (request !== undefined) {
    const client = await checkClient(deps, q);
    try {
      return { q: await verifyRequestObject(client, request, deps.config.issuer) };
    } catch (err) {
      if (err instanceof OAuthError) throw new PageError(err.message, 400, 'invalid_request_object');
      throw err;
    }
  }
  return { q };
}
