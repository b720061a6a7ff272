import type { CredentialRow } from '../store/principals.js';

export type { TenantScope } from '../admin-access.js';
export { PRINCIPAL_TYPES, type CredentialAlg, type CredentialRow, type PrincipalRow, type PrincipalType } from '../store/principals.js';

/** Stored status, with `expired` derived once expires_at has passed (revoked stays revoked). */
export function credentialStatus(c: CredentialRow, now = Date.now()): CredentialRow['status'] {
  if (c.status === 'revoked') return 'revoked';
  if (c.expires_at !== null && Number(c.expires_at) <= now) return 'expired';
  return c.status;
}

/** A credential can sign assertions now: not revoked, inside its notBefore/expiresAt window. */
export function usable(c: CredentialRow, now = Date.now()): boolean {
  const s = credentialStatus(c, now);
  return (s === 'active' || s === 'rotating') && (c.not_before === null || Number(c.not_before) <= now);
}

/**
 * The backing client's jwks: the public JWK of every credential usable now, with kid, alg, use and its
 * validity window as `nbf`/`exp` members (epoch seconds). Window edges are applied by re-syncing (see
 * sweeper.ts); the members let client authentication enforce them exactly as well.
 */
export function jwksOf(creds: CredentialRow[], now = Date.now()): { keys: Array<Record<string, unknown>> } {
  return {
    keys: creds.filter((c) => usable(c, now)).map((c) => ({
      ...c.public_jwk, kid: c.kid, alg: c.alg, use: 'sig',
      ...(c.not_before !== null ? { nbf: Math.floor(Number(c.not_before) / 1000) } : {}),
      ...(c.expires_at !== null ? { exp: Math.floor(Number(c.expires_at) / 1000) } : {}),
    })),
  };
}
