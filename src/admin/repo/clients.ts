import type { Client } from '../../clients/model.js';
import type { Sql, TxSql } from '../../store/sql.js';
import type { Cursor } from '../pagination.js';

type Db = Sql | TxSql;

/** The row as administration shows it (no secret hash). */
export interface ClientRow {
  client_id: string; tenant_id: string; name: string; token_endpoint_auth_method: Client['authMethod']; grant_types: string[]; scopes: string[];
  redirect_uris: string[]; post_logout_redirect_uris: string[]; allowed_audiences: string[]; audience: string | null; strict_validation: boolean;
  can_introspect: boolean; first_party: boolean; access_token_ttl: number | null; refresh_token_ttl: number | null; jwks: Client['jwks'];
  permissions: string[]; tenant_scopes: Client['tenantScopes']; status: Client['status']; created_at: number; updated_at: number;
}

const COLS = (sql: Db) => sql`client_id, tenant_id, name, token_endpoint_auth_method, grant_types, scopes, redirect_uris, post_logout_redirect_uris,
  allowed_audiences, audience, strict_validation, can_introspect, first_party, access_token_ttl, refresh_token_ttl, jwks, permissions,
  tenant_scopes, status, created_at, updated_at`;

export async function getClientRow(sql: Db, tenantId: string, clientId: string, lock = false): Promise<ClientRow | null> {
  const [row] = await sql<ClientRow[]>`select ${COLS(sql)} from clients where tenant_id = ${tenantId} and client_id = ${clientId} ${lock ? sql`for update` : sql``}`;
  return row ?? null;
}

export async function listClientRows(sql: Db, tenantId: string, f: { limit: number; cursor?: Cursor | undefined; status?: string | undefined }): Promise<ClientRow[]> {
  return sql<ClientRow[]>`select ${COLS(sql)} from clients where tenant_id = ${tenantId}
      ${f.cursor ? sql`and (created_at, client_id) < (${f.cursor.createdAt}, ${f.cursor.id})` : sql``}
      ${f.status ? sql`and status = ${f.status}` : sql``}
      and not exists (select 1 from machine_principals mp where mp.tenant_id = ${tenantId} and mp.client_id = clients.client_id)
    order by created_at desc, client_id desc limit ${f.limit + 1}`;
}

export interface ClientPatch {
  name?: string; grant_types?: string[]; scopes?: string[]; redirect_uris?: string[]; post_logout_redirect_uris?: string[]; allowed_audiences?: string[];
  audience?: string | null; strict_validation?: boolean; can_introspect?: boolean; first_party?: boolean; access_token_ttl?: number | null;
  refresh_token_ttl?: number | null; jwks?: Client['jwks']; permissions?: string[]; tenant_scopes?: Client['tenantScopes']; status?: Client['status'];
}

export async function updateClientRow(sql: Db, tenantId: string, clientId: string, p: ClientPatch): Promise<ClientRow | null> {
  const keep = (v: unknown, col: string) => (v !== undefined ? v : sql(col));
  const [row] = await sql<ClientRow[]>`update clients set
      name = ${keep(p.name, 'name') as string}, grant_types = ${keep(p.grant_types, 'grant_types') as string[]},
      scopes = ${keep(p.scopes, 'scopes') as string[]}, redirect_uris = ${keep(p.redirect_uris, 'redirect_uris') as string[]},
      post_logout_redirect_uris = ${keep(p.post_logout_redirect_uris, 'post_logout_redirect_uris') as string[]},
      allowed_audiences = ${keep(p.allowed_audiences, 'allowed_audiences') as string[]}, audience = ${keep(p.audience, 'audience') as string},
      strict_validation = ${keep(p.strict_validation, 'strict_validation') as boolean}, can_introspect = ${keep(p.can_introspect, 'can_introspect') as boolean},
      first_party = ${keep(p.first_party, 'first_party') as boolean}, access_token_ttl = ${keep(p.access_token_ttl, 'access_token_ttl') as number},
      refresh_token_ttl = ${keep(p.refresh_token_ttl, 'refresh_token_ttl') as number},
      jwks = ${p.jwks !== undefined ? (p.jwks === null ? null : sql.json(p.jwks as never)) : sql`jwks`},
      permissions = ${keep(p.permissions, 'permissions') as string[]},
      tenant_scopes = ${p.tenant_scopes !== undefined ? sql.json(p.tenant_scopes as never) : sql`tenant_scopes`},
      status = ${keep(p.status, 'status') as string}, updated_at = now_ms()
    where tenant_id = ${tenantId} and client_id = ${clientId} returning ${COLS(sql)}`;
  return row ?? null;
}

export async function setClientSecretHash(sql: Db, tenantId: string, clientId: string, hash: Buffer): Promise<boolean> {
  const r = await sql`update clients set secret_hash = ${hash}, updated_at = now_ms() where tenant_id = ${tenantId} and client_id = ${clientId}`;
  return r.count === 1;
}

export async function deleteClientRow(sql: Db, tenantId: string, clientId: string): Promise<ClientRow | null> {
  const [row] = await sql<ClientRow[]>`delete from clients where tenant_id = ${tenantId} and client_id = ${clientId} returning ${COLS(sql)}`;
  return row ?? null;
}

/** True when a machine access principal owns this client (it is then managed through the principal). */
export async function isPrincipalClient(sql: Db, tenantId: string, clientId: string): Promise<boolean> {
  const [row] = await sql`select 1 from machine_principals where tenant_id = ${tenantId} and client_id = ${clientId}`;
  return !!row;
}

/** Ends every refresh token issued to a client (disable, delete). */
export async function revokeClientRefreshTokens(sql: Db, tenantId: string, clientId: string): Promise<number> {
  const r = await sql`update refresh_tokens set status = 'revoked' where tenant_id = ${tenantId} and client_id = ${clientId} and status = 'active'`;
  return r.count;
}
