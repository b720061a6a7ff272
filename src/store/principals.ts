import type { TenantScope } from '../admin-access.js';
import type { Db } from '../sql.js';

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

export interface NewPrincipal {
  id: string; clientId: string; displayName: string; description: string | null; principalType: string; tokenTtlSeconds: number;
  permissions: string[]; tenantScopes: TenantScope[];
}

/** The fields an update may replace; absent ones keep their stored value. */
export interface PrincipalPatch {
  displayName?: string | undefined; description?: string | null | undefined; tokenTtlSeconds?: number | undefined;
  permissions?: string[] | undefined; tenantScopes?: TenantScope[] | undefined; status?: PrincipalRow['status'] | undefined;
}

export interface NewCredential {
  id: string; kid: string; publicJwk: Record<string, unknown>; alg: string; displayName: string; description: string | null;
  notBefore: number | null; expiresAt: number | null;
}

export interface PrincipalFilter { page: number; limit: number; status?: string | undefined; principal_type?: string | undefined }
/** Machine access principals of one tenant, their credentials, and the backing client they drive. */
export class PrincipalRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  async insert(p: NewPrincipal): Promise<PrincipalRow> {
    const sql = this.db;
    const [row] = await sql<PrincipalRow[]>`insert into machine_principals (tenant_id, id, client_id, display_name, description, principal_type,
        token_ttl_seconds, permissions, tenant_scopes)
      values (${this.tenantId}, ${p.id}, ${p.clientId}, ${p.displayName}, ${p.description}, ${p.principalType}, ${p.tokenTtlSeconds},
        ${p.permissions}, ${sql.json(p.tenantScopes as never)}) returning *`;
    return row!;
  }

  /** One principal; `lock` takes its row lock for the rest of the transaction. */
  async get(id: string, lock = false): Promise<PrincipalRow | null> {
    const sql = this.db;
    const [row] = await sql<PrincipalRow[]>`select * from machine_principals where tenant_id = ${this.tenantId} and id = ${id} ${lock ? sql`for update` : sql``}`;
    return row ?? null;
  }

  /** One page, newest first, and the number of principals matching the filter. */
  async list(f: PrincipalFilter): Promise<{ rows: PrincipalRow[]; total: number }> {
    const sql = this.db;
    const filters = sql`${f.status ? sql`and status = ${f.status}` : sql``} ${f.principal_type ? sql`and principal_type = ${f.principal_type}` : sql``}`;
    const [rows, [count]] = await Promise.all([
      sql<PrincipalRow[]>`select * from machine_principals where tenant_id = ${this.tenantId} ${filters} order by created_at desc, id desc limit ${f.limit} offset ${(f.page - 1) * f.limit}`,
      sql<{ n: number }[]>`select count(*)::int as n from machine_principals where tenant_id = ${this.tenantId} ${filters}`,
    ]);
    return { rows, total: count!.n };
  }

  /** Applies the given fields; null when there is no such principal. */
  async update(id: string, p: PrincipalPatch): Promise<PrincipalRow | null> {
    const sql = this.db;
    const [row] = await sql<PrincipalRow[]>`update machine_principals set
        display_name = ${p.displayName !== undefined ? p.displayName : sql`display_name`},
        description = ${p.description !== undefined ? p.description : sql`description`},
        token_ttl_seconds = ${p.tokenTtlSeconds !== undefined ? p.tokenTtlSeconds : sql`token_ttl_seconds`},
        permissions = ${p.permissions !== undefined ? p.permissions : sql`permissions`},
        tenant_scopes = ${p.tenantScopes !== undefined ? sql.json(p.tenantScopes as never) : sql`tenant_scopes`},
        status = ${p.status !== undefined ? p.status : sql`status`},
        updated_at = now_ms()
      where tenant_id = ${this.tenantId} and id = ${id} returning *`;
    return row ?? null;
  }

  /** The credentials of the given principals, oldest first. */
  async credentialsOf(principalIds: string[]): Promise<CredentialRow[]> {
    if (!principalIds.length) return [];
    return this.db<CredentialRow[]>`select * from principal_credentials
      where tenant_id = ${this.tenantId} and principal_id = any(${principalIds}) order by created_at, id`;
  }

  /** One credential of a principal, locked for the rest of the transaction. */
  async getCredential(principalId: string, id: string): Promise<CredentialRow | null> {
    const [row] = await this.db<CredentialRow[]>`select * from principal_credentials
      where tenant_id = ${this.tenantId} and principal_id = ${principalId} and id = ${id} for update`;
    return row ?? null;
  }

  /** Inserts a credential; null when the principal already has a credential with this kid. */
  async insertCredential(principalId: string, c: NewCredential): Promise<CredentialRow | null> {
    const sql = this.db;
    const [row] = await sql<CredentialRow[]>`insert into principal_credentials (tenant_id, id, principal_id, kid, public_jwk, alg, display_name,
        description, status, not_before, expires_at)
      values (${this.tenantId}, ${c.id}, ${principalId}, ${c.kid}, ${sql.json(c.publicJwk as never)}, ${c.alg}, ${c.displayName}, ${c.description},
        'active', ${c.notBefore}, ${c.expiresAt})
      on conflict (tenant_id, principal_id, kid) do nothing returning *`;
    return row ?? null;
  }

  /** Sets a credential's status (and its expiry when given); null when there is no such credential. */
  async setCredentialState(id: string, status: CredentialRow['status'], expiresAt?: number | null): Promise<CredentialRow | null> {
    const sql = this.db;
    const [row] = await sql<CredentialRow[]>`update principal_credentials set status = ${status},
        expires_at = ${expiresAt !== undefined ? expiresAt : sql`expires_at`}, updated_at = now_ms()
      where tenant_id = ${this.tenantId} and id = ${id} returning *`;
    return row ?? null;
  }

  async revokeAllCredentials(principalId: string): Promise<void> {
    await this.db`update principal_credentials set status = 'revoked', updated_at = now_ms()
      where tenant_id = ${this.tenantId} and principal_id = ${principalId} and status <> 'revoked'`;
  }

  /** Mirrors a principal onto its private_key_jwt client: name, permissions, tenant scopes, TTL, status and jwks. */
  async syncClient(p: PrincipalRow, jwks: { keys: Array<Record<string, unknown>> }): Promise<void> {
    const sql = this.db;
    await sql`update clients set name = ${p.display_name}, permissions = ${p.permissions}, tenant_scopes = ${sql.json(p.tenant_scopes as never)},
        access_token_ttl = ${Number(p.token_ttl_seconds)}, status = ${p.status === 'active' ? 'active' : 'disabled'}, jwks = ${sql.json(jwks as never)},
        updated_at = now_ms()
      where tenant_id = ${this.tenantId} and client_id = ${p.client_id}`;
  }
}
