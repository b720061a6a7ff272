import type { Deps } from '../../deps.js';
import { revokeFamily } from '../../tokens/refresh-tokens.js';
import type { IssuedForUser } from './grant.js';

/**
 * Revokes what a replayed code's first redemption issued (RFC 6749 4.1.2, RFC 9700 4.5): its access
 * token by jti, and the refresh token's whole family (so refreshed descendants go with it).
 * Shared by the authorization code and device code grants.
 */
export async function revokeIssued(deps: Deps, tenant: string, issued: IssuedForUser): Promise<void> {
  await deps.tokens.revocations.revoke(tenant, issued.accessJti, issued.accessExp);
  if (issued.refreshFamily) await revokeFamily(deps.sql, tenant, issued.refreshFamily);
}
