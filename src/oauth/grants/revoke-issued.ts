import type { Deps } from '../../deps.js';
import { OAuthError } from '../../errors.js';
import { revokeFamily } from '../../tokens/refresh-tokens.js';
import type { IssuedForUser } from './grant.js';

/**
 * Revokes what a replayed code's first redemption issued (RFC 6749 4.1.2, RFC 9700 4.5): its access
 * token by jti, and the refresh token's whole family (so refreshed descendants go with it).
 * Shared by the authorization code and device code grants.
 */
export async function revokeIssued(deps: Deps, tenant: string, issued: IssuedForUser): Promise<void> {
  await deps.tokens.revocations.revoke(tenant, issued.accessJti, issued.accessExp, deps.trace);
  if (issued.refreshFamily) await revokeFamily(deps.sql, tenant, issued.refreshFamily);
}

const signInEnded = () => new OAuthError('invalid_grant', 'The sign-in that approved this has ended: the user must sign in again.');

/**
 * A code's first redemption (authorization or device code): issues the approval's tokens and records
 * them for a later replay (`record`, which never rejects), then keeps them, or revokes them again and
 * refuses when a replay arrived meanwhile or the sign-in that approved the code has ended since (its
 * user was locked, suspended or deleted: the `login` mark, src/login/end-sessions.ts). The record and
 * the mark are read in the same tick, so they leave in one Redis write: the check costs no round trip.
 */
export async function issueOnce<T extends { issued: IssuedForUser }>(
  deps: Deps, tenant: string, approval: { userId: string; authTime: number },
  issue: () => Promise<T>, record: (issued: IssuedForUser) => Promise<boolean>, replayed: () => OAuthError,
): Promise<T> {
  const ended = () => deps.tokens.revocations.signInEnded(tenant, approval.userId, approval.authTime, deps.trace);
  let out: T;
  try {
    out = await issue();
  } catch (err) {
    // A deleted user's tokens cannot be stored (their consent has no user row): that is the ended sign-in.
    if (!(err instanceof OAuthError) && await ended().catch(() => false)) throw signInEnded();
    throw err;
  }
  const [again, gone] = await Promise.all([record(out.issued), ended().catch((err: unknown) => err)]);
  if (!again && gone === false) return out;
  await revokeIssued(deps, tenant, out.issued);
  if (again) throw replayed();
  // The check could not be made (the revocation state is not loaded): refused as unavailable, fail closed.
  if (gone !== true) throw gone;
  throw signInEnded();
}
