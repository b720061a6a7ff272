import type { Client } from '../../clients/model.js';
import { isResourceUri } from '../../resources/uri.js';
import { RedirectableError, type Query } from './types.js';

/** At most this many resources in one authorization request (as at /token). */
const MAX_RESOURCES = 10;

/**
 * RFC 8707 2.1: the resources the tokens are for (repeatable), each an absolute URI without a fragment
 * and one of the client's allowed audiences, or invalid_target sent back to the client. The code's
 * tokens are then for these only (src/oauth/grants/authorization-code.ts).
 */
export function checkResource(client: Client, q: Query): string[] {
  const v = q.resource;
  const list = [...new Set((v === undefined ? [] : Array.isArray(v) ? v : [v]).filter((x) => x !== ''))];
  if (list.length > MAX_RESOURCES) throw new RedirectableError('invalid_target', `At most ${MAX_RESOURCES} resources per authorization request.`);
  for (const r of list) {
    if (typeof r !== 'string' || !isResourceUri(r)) throw new RedirectableError('invalid_target', 'A resource must be an absolute URI without a fragment.');
    if (!client.allowedAudiences.includes(r)) throw new RedirectableError('invalid_target', `The application may not obtain tokens for ${JSON.stringify(r)}.`);
  }
  return list;
}
