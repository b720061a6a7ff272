import type { Deps } from '../deps.js';
import { Unauthorized } from '../errors.js';
import { bearerToken } from '../http/bearer.js';
import type { HttpRequest } from '../http/request.js';
import { JwtError, type JwtPayload } from '../tokens/jwt.js';
import { revocationSubject } from '../tokens/revocation.js';
import { dpopToken, ResourceDpop } from '../dpop/resource.js';

// One per process's dependencies (built on first use: the routes that call userBearer share it).
const checkers = new WeakMap<Deps, ResourceDpop>();
function resourceDpop(deps: Deps): ResourceDpop {
  let c = checkers.get(deps);
  if (!c) { c = new ResourceDpop(deps.redis, deps.config.keyEncryptionKey, deps.config.issuer, deps.tokens.tenantSettings); checkers.set(deps, c); }
  return c;
}

/**
 * An end user's access token from `Authorization: Bearer`: signature, expiry and revocation checked.
 * Only tokens issued to a user (a login, so carrying auth_time) qualify, not client_credentials tokens.
 * With `audience`, the token's aud must include it (a token minted for another resource is refused).
 */
export async function userBearer(deps: Deps, req: HttpRequest, audience?: string): Promise<JwtPayload> {
  const bearer = bearerToken(req);
  const token = bearer ?? dpopToken(req);
  if (token === undefined) throw new Unauthorized('unauthorized', 'A Bearer access token is required.');
  let p: JwtPayload;
  try {
    p = deps.tokens.accessTokens.verify(token);
  } catch (err) {
    if (err instanceof JwtError && err.reason === 'expired') throw new Unauthorized('token_expired', 'The access token has expired.');
    throw new Unauthorized('unauthorized', 'The access token is invalid.');
  }
  if (await deps.tokens.revocations.isRevoked(revocationSubject(p))) {
    throw new Unauthorized('token_revoked', 'The access token has been revoked.');
  }
  // Sender constraint (RFC 9449 7): a bound token needs the DPoP scheme and a proof of its key.
  await resourceDpop(deps).check(req, token, bearer === undefined ? 'DPoP' : 'Bearer', p);
  if (typeof p.auth_time !== 'number' || typeof p.sub !== 'string' || typeof p.tenant !== 'string') throw new Unauthorized('unauthorized', 'The access token was not issued to a signed-in user.');
  if (audience !== undefined && !(Array.isArray(p.aud) ? p.aud : [p.aud]).includes(audience)) {
    throw new Unauthorized('unauthorized', 'The access token is not for this API (its audience must include the issuer).');
  }
  return p;
}
