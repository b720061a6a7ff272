import type { HttpRequest } from './request.js';

/** `Bearer` (any case, RFC 9110 11.1), one or more spaces, then a b64token (RFC 6750 2.1). */
const BEARER = /^bearer +([A-Za-z0-9._~+/-]+=*) *$/i;

/**
 * The credential of an `Authorization: Bearer` header, or undefined when there is none or it is not
 * well formed. Only the parsing: each caller verifies the credential and answers its own errors.
 */
export function bearerToken(req: HttpRequest): string | undefined {
  const h = req.headers.authorization;
  return h === undefined ? undefined : BEARER.exec(h)?.[1];
}
