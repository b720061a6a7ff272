import type { Sql, TxSql } from '../store/sql.js';
import type { CredentialRow, PrincipalRow, TenantScope } from './model.js';

type Db = Sql | TxSql;

export interface NewPrincipal {
  id: string; clientId: string; displayName: string; description: string | null; principalType: string; tokenTtlSeconds: number;
  permissions: string[]; tenantScopes: TenantScope[];
}

export async function insertPrincipal(sql: Db, tenantId: string, p: NewPrincipal): Promise<PrincipalRow> {
  const [row] = await sql<PrincipalRow[]>`insert into machine_principals (tenant_id, id, client_id, display_name, description, principal_type,
      token_ttl_seconds, permissions, tenant_scopes)
    values (${tenantId}, ${p.id}, ${p.clientId}, ${p.displayName}, ${p.description}, ${p.principalType}, ${p.tokenTtlSeconds},
      ${p.permissions}, ${sql.json(p.tenantScopes as never)}) returning *`;
  return row!;
}

export async function getPrincipal(sql: Db, tenantId: string, id: string, lock = false): Promise<PrincipalRow | null> {
  const [row] = await sql<PrincipalRow[]>`select * from machine_principals where tenant_id = ${tenantId} and id = ${id} ${lock ? sql`for update` : sql``}`;
  return row ?? null;
}

export async function listPrincipals(sql: Db, tenantId: string, f: { page: number; limit: number; status?: string | undefined; principal_type?: string | undefined }): Promise<{ rows: PrincipalRow[]; total: number }> {
  const where = sql`tenant_id = ${tenantId} ${f.status ? sql`and status = ${f.status}` : sql``} ${f.principal_type ? sql`and principal_type = ${f.principal_type}` : sql``}`;
  const [rows, [count]] = await Promise.all([
    sql<PrincipalRow[]>`select * from machine_principals where ${where} order by created_at desc, id desc limit ${f.limit} offset ${(f.page - 1) * f.limit}`,
    sql<{ n: number }[]>`select count(*)::int as n from machine_principals where ${where}`,
  ]);
  return { rows, total: count!.n };
}

export interface PrincipalPatch { displayName?: string; description?: string | null; tokenTtlSeconds?: number; permissions?: string[]; tenantScopes?: TenantScope[]; status?: PrincipalRow['status'] }

export async function updatePrincipal(sql: Db, tenantId: string, id: string, p: PrincipalPatch): Promise<PrincipalRow> {
  const [row] = await sql<PrincipalRow[]>`update machine_principals set
      display_name = ${p.displayName !== undefined ? p.displayName : sql`display_name`},
      description = ${p.description !== undefined ? p.description : sql`description`},
      token_ttl_seconds = ${p.tokenTtlSeconds !== undefined ? p.tokenTtlSeconds : sql`token_ttl_seconds`},
      permissions = ${p.permissions !== undefined ? p.permissions : sql`permissions`},
      tenant_scopes = ${p.tenantScopes !== undefined ? sql.json(p.tenantScopes as never) : sql`tenant_scopes`},
      status = ${p.status !== undefined ? p.status : sql`status`},
      updated_at = now_ms()
    where tenant_id = ${tenantId} and id = ${id} returning *`;
  return row!;
}

export async function credentialsOf(sql: Db, tenantId: string, principalIds: string[]): Promise<CredentialRow[]> {
  if (!principalIds.length) return [];
  return sql<CredentialRow[]>`select * from principal_credentials where tenant_id = ${tenantId} and principal_id = any(${principalIds}) order by created_at, id`;
}

export async function getCredential(sql: Db, tenantId: string, principalId: string, id: string): Promise<CredentialRow | null> {
  const [row] = await sql<CredentialRow[]>`select * from principal_credentials where tenant_id = ${tenantId} and principal_id = ${principalId} and id = ${id} for update`;
  return row ?? null;
}

export interface NewCredential {
  id: string; kid: string; publicJwk: Record<string, unknown>; alg: string; displayName: string; description: string | null; notBefore: number | null; expiresAt: number | null;
}

/** Inserts a credential; null when the principal already has a credential with this kid. */
export async function insertCredential(sql: Db, tenantId: string, principalId: string, c: NewCredential): Promise<CredentialRow | null> {
  const [row] = await sql<CredentialRow[]>`insert into principal_credentials (tenant_id, id, principal_id, kid, public_jwk, alg, display_name, description, status, not_before, expires_at)
    values (${tenantId}, ${c.id}, ${principalId}, ${c.kid}, ${sql.json(c.publicJwk as never)}, ${c.alg}, ${c.displayName}, ${c.description}, 'active', ${c.notBefore}, ${c.expiresAt})
    on conflict (tenant_id, principal_id, kid) do nothing returning *`;
  return row ?? null;
}

export async function setCredentialState(sql: Db, tenantId: string, id: string, status: CredentialRow['status'], expiresAt?: number | null): Promise<CredentialRow> {
  const [row] = await sql<CredentialRow[]>`update principal_credentials set status = ${status},
      expires_at = ${expiresAt !== undefined ? expiresAt : sql`expires_at`}, updated_at = now_ms()
    where tenant_id = ${tenantId} and id = ${id} returning *`;
  return row!;
}

export async function revokeAllCredentials(sql: Db, tenantId: string, principalId: string): Promise<void> {
  await sql`update principal_credentials set status = 'revoked', updated_at = now_ms() where tenant_id = ${tenantId} and principal_id = ${principalId} and status <> 'revoked'`;
}

/** Mirrors a principal onto its private_key_jwt client: name, permissions, tenant scopes, TTL, status and jwks. */
export async function syncPrincipalClient(sql: Db, p: PrincipalRow, jwks: { keys: Array<Record<string, unknown>> }): Promise<void> {
  await sql`update clients set name = ${p.display_name}, permissions = ${p.permissions}, tenant_scopes = ${sql.json(p.tenant_scopes as never)},
      access_token_ttl = ${Number(p.token_ttl_seconds)}, status = ${p.status === 'active' ? 'active' : 'disabled'}, jwks = ${sql.json(jwks as never)},
      updated_at = now_ms()
    where tenant_id = ${p.tenant_id} and client_id = ${p.client_id}`;
}
