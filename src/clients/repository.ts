import type { Sql } from '../store/sql.js';
import type { Client } from './model.js';

interface Row {
  client_id: string; tenant_id: string; name: string; secret_hash: Buffer | null; token_endpoint_auth_method: Client['authMethod'];
  grant_types: string[]; scopes: string[]; redirect_uris: string[]; post_logout_redirect_uris: string[]; allowed_audiences: string[];
  audience: string | null; strict_validation: boolean; can_introspect: boolean; first_party: boolean; access_token_ttl: number | null;
  refresh_token_ttl: number | null; jwks: Client['jwks']; permissions: string[]; tenant_scopes: Client['tenantScopes'];
  status: Client['status']; created_at: number; updated_at: number;
}

function toClient(r: Row): Client {
  return {
    clientId: r.client_id, tenantId: r.tenant_id, name: r.name, secretHash: r.secret_hash, authMethod: r.token_endpoint_auth_method,
    grantTypes: r.grant_types, scopes: r.scopes, redirectUris: r.redirect_uris, postLogoutRedirectUris: r.post_logout_redirect_uris,
    allowedAudiences: r.allowed_audiences, audience: r.audience, strictValidation: r.strict_validation, canIntrospect: r.can_introspect,
    firstParty: r.first_party, accessTokenTtl: r.access_token_ttl, refreshTokenTtl: r.refresh_token_ttl, jwks: r.jwks,
    permissions: r.permissions, tenantScopes: r.tenant_scopes, status: r.status, createdAt: Number(r.created_at), updatedAt: Number(r.updated_at),
  };
}

/**
 * Client lookup by id for authentication. Client ids are globally unique, so the token endpoint can find
 * a client before it knows the tenant; the tenant then comes from the client record.
 */
export async function findClientById(sql: Sql, clientId: string): Promise<Client | null> {
  const [row] = await sql<Row[]>`select * from clients where client_id = ${clientId}`;
  return row ? toClient(row) : null;
}

export interface NewClient {
  clientId: string; tenantId: string; name: string; secretHash: Buffer | null; authMethod?: Client['authMethod'];
  grantTypes: string[]; scopes?: string[]; redirectUris?: string[]; postLogoutRedirectUris?: string[]; allowedAudiences?: string[];
  audience?: string | null; strictValidation?: boolean; canIntrospect?: boolean; firstParty?: boolean; accessTokenTtl?: number | null;
  refreshTokenTtl?: number | null; jwks?: Client['jwks']; permissions?: string[]; tenantScopes?: Client['tenantScopes'];
}

/** Inserts a client; returns null when the client id is taken. */
export async function insertClient(sql: Sql, c: NewClient): Promise<Client | null> {
  const [row] = await sql<Row[]>`
    insert into clients (client_id, tenant_id, name, secret_hash, token_endpoint_auth_method, grant_types, scopes, redirect_uris,
      post_logout_redirect_uris, allowed_audiences, audience, strict_validation, can_introspect, first_party, access_token_ttl,
      refresh_token_ttl, jwks, permissions, tenant_scopes)
    values (${c.clientId}, ${c.tenantId}, ${c.name}, ${c.secretHash}, ${c.authMethod ?? 'client_secret_basic'}, ${c.grantTypes},
      ${c.scopes ?? []}, ${c.redirectUris ?? []}, ${c.postLogoutRedirectUris ?? []}, ${c.allowedAudiences ?? []}, ${c.audience ?? null},
      ${c.strictValidation ?? false}, ${c.canIntrospect ?? false}, ${c.firstParty ?? false}, ${c.accessTokenTtl ?? null},
      ${c.refreshTokenTtl ?? null}, ${c.jwks ? sql.json(c.jwks as never) : null}, ${c.permissions ?? []}, ${sql.json((c.tenantScopes ?? []) as never)})
    on conflict (client_id) do nothing
    returning *`;
  return row ? toClient(row) : null;
}

export async function setClientStatus(sql: Sql, tenantId: string, clientId: string, status: Client['status']): Promise<boolean> {
  const r = await sql`update clients set status = ${status}, updated_at = now_ms() where tenant_id = ${tenantId} and client_id = ${clientId}`;
  return r.count === 1;
}
