import type { Sql } from '../sql.js';

// Every HTTP process verifies every tenant's tokens and serves the full JWKS (one issuer serves every
// tenant, so its jwks_uri publishes every tenant's keys), so the key ring loads the keys of all tenants
// at once, on start, on a keys notice and on its timer — never per request.

export interface TenantKeyRow {
  tenant_id: string; kid: string; alg: string; rank: number | null; public_jwk: Record<string, unknown>; private_key_enc: Buffer;
  status: 'next' | 'active' | 'retired'; created_at: string;
}

/** Every tenant's keys that still sign or verify (active, next, retired until verify_until), for the key ring. */
export function liveTenantKeys(sql: Sql, now: number): Promise<TenantKeyRow[]> {
  return sql<TenantKeyRow[]>`select tenant_id, kid, alg, rank, public_jwk, private_key_enc, status, created_at from tenant_signing_keys
    where status in ('active', 'next') or verify_until > ${now} order by tenant_id, rank nulls last, created_at`;
}

/** The tenants that still accept tokens signed with the deployment's keys before they moved to their own, for the key ring. */
export function tenantsStillSharing(sql: Sql, now: number): Promise<Array<{ id: string; shared_keys_until: string }>> {
  return sql<{ id: string; shared_keys_until: string }[]>`select id, shared_keys_until from tenants where shared_keys_until > ${now}`;
}
