import { GRANT, type Client } from '../../clients/model.js';
import { param, RedirectableError, type Query } from './types.js';

/** Step 3: only the authorization code flow, with query response mode, for clients allowed to use it. */
export function checkResponseType(client: Client, q: Query): void {
  const bad = (m: string) => new RedirectableError('invalid_request', m);
  const rt = param(q, 'response_type', bad);
  if (rt === undefined) throw bad('The response_type parameter is required.');
  if (rt !== 'code') throw new RedirectableError('unsupported_response_type', 'Only response_type=code is supported.');
  const mode = param(q, 'response_mode', bad);
  if (mode !== undefined && mode !== 'query') throw bad('Only response_mode=query is supported.');
  if (!client.grantTypes.includes(GRANT.authorizationCode)) throw new RedirectableError('unauthorized_client', 'The application may not use the authorization code flow.');
  for (const p of ['request', 'request_uri'] as const) {
    if (q[p] !== undefined) throw new RedirectableError(p === 'request' ? 'request_not_supported' : 'request_uri_not_supported', `The ${p} parameter is not supported.`);
  }
}
