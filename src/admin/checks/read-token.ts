import type { Deps } from '../../deps.js';
import { Unauthorized } from '../../errors.js';
import { bearerToken } from '../../http/bearer.js';
import type { HttpRequest } from '../../http/request.js';
import { JwtError, type JwtPayload } from '../../tokens/jwt.js';

/** Step 1: a Bearer access token signed by this server and not expired (401 unauthorized / token_expired). */
export function readToken(deps: Deps, req: HttpRequest): JwtPayload {
  const token = bearerToken(req);
  if (token === undefined) throw new Unauthorized('unauthorized', 'A Bearer access token is required.');
  try {
    return deps.tokens.accessTokens.verify(token);
  } catch (err) {
    if (err instanceof JwtError && err.reason === 'expired') throw new Unauthorized('token_expired', 'The access token has expired.');
    throw new Unauthorized('unauthorized', 'The access token is not valid.');
  }
}
