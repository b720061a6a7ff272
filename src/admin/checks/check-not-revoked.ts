import type { Deps } from '../../deps.js';
import { Unauthorized } from '../../errors.js';
import type { JwtPayload } from '../../tokens/jwt.js';

/** Step 4: neither the token nor its subject or client has been revoked (401 token_revoked). */
export async function checkNotRevoked(deps: Deps, p: JwtPayload): Promise<void> {
  if (await deps.tokens.revocations.isRevoked({ jti: String(p.jti), tenant: String(p.tenant), sub: p.sub, client_id: p.client_id, iat: p.iat })) {
    throw new Unauthorized('token_revoked', 'The access token has been revoked.');
  }
}
