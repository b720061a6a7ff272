import type { Sql } from '../sql.js';

// Sweeps of the jobs worker find what has come due in every tenant at once (one scheduled job per
// deployment, not one per tenant); each row found names its tenant, and the sweep then acts on it
// through that tenant's repositories.

/**
 * Cross-tenant, for the expiry sweep only: requests still open past their own or a pending step's
 * expires_at, and active grants past theirs.
 */
export function approvalsDueForExpiry(sql: Sql, now: number, limit = 500): Promise<Array<{ tenant_id: string; id: string }>> {
  return sql<{ tenant_id: string; id: string }[]>`
    select tenant_id, id from approval_requests where status in ('pending', 'partially_approved', 'approved') and expires_at <= ${now}
    union
    select tenant_id, request_id from approval_steps where status = 'pending' and expires_at <= ${now}
    union
    select tenant_id, request_id from elevation_grants where status = 'active' and expires_at <= ${now}
    limit ${limit}`;
}

/**
 * Principals whose credentials entered (notBefore) or left (expiresAt) their validity window in
 * (since, now], across tenants: the one query of this module without a tenant, for the background
 * sweeper, which then re-syncs each principal through its own tenant's repository.
 */
export function principalsWithCredentialEdges(sql: Sql, since: number, now: number): Promise<Array<{ tenant_id: string; principal_id: string }>> {
  return sql<{ tenant_id: string; principal_id: string }[]>`
    select distinct tenant_id, principal_id from principal_credentials
    where (not_before > ${since} and not_before <= ${now}) or (expires_at > ${since} and expires_at <= ${now})`;
}
