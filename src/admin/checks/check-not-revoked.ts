import type { Deps } from '../../deps.js';
import { Unauthorized } from '../../errors.js';
import type { JwtPayload } from '../../tokens/jwt.js';
import { revocationSubject } from '../../tokens/revocation.js';

/**
 * Step 4: neither the token nor its subject or client has been revoked (401 token_revoked). Says
 * whether the token's own tenant is suspended (read in the same Redis command), for the tenant step.
 */
export async function checkNotRevoked(deps: Deps, p: JwtPayload): Promise<{ tenantRefused: boolean }> {
  const r = await deps.tokens.revocations.lookup(revocationSubject(p));
  if (r.revoked) throw new Unauthorized('token_revoked', 'The access token has been revoked.');
  return { tenantRefused: r.tenantRefused };
}
