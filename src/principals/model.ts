import type { TenantScope } from '../clients/model.js';

export type { TenantScope };

/** A machine access principal (spec: Machine access principal) as stored. */
export interface PrincipalRow {
  tenant_id: string; id: string; client_id: string; display_name: string; description: string | null; principal_type: PrincipalType;
  status: 'active' | 'disabled' | 'deleted'; token_ttl_seconds: number; permissions: string[]; tenant_scopes: TenantScope[];
  created_at: number; updated_at: number;
}

export interface CredentialRow {
  tenant_id: string; id: string; principal_id: string; kid: string; public_jwk: Record<string, unknown>; alg: CredentialAlg;
  display_name: string; description: string | null; status: 'active' | 'rotating' | 'revoked' | 'expired';
  not_before: number | null; expires_at: number | null; created_at: number; updated_at: number;
}

export type CredentialAlg = 'ES256' | 'PS256' | 'RS256';
export const PRINCIPAL_TYPES = ['setup_tool', 'admin_ui_bff', 'automation', 'ci', 'mcp_server', 'ai_agent', 'internal_service', 'integration'] as const;
export type PrincipalType = (typeof PRINCIPAL_TYPES)[number];

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
