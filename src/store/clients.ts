import type { TenantScope } from '../admin-access.js';
import type { Cursor } from './cursor.js';
import type { Db } from '../sql.js';

/** An OAuth client as the token endpoints see it (never carries the secret, only its keyed hash). */
export interface Client {
  clientId: string;
  tenantId: string;
  name: string;
  secretHash: Buffer | null;
  authMethod: 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt' | 'none';
  grantTypes: string[];
  scopes: string[];
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  allowedAudiences: string[];
  audience: string | null;
  strictValidation: boolean;
  /** Every token request must carry a DPoP proof (RFC 9449 5.2). */
  dpopBoundAccessTokens: boolean;
  /** /authorize only takes this client's requests pushed to /par (RFC 9126 6). */
  requirePushedAuthorizationRequests: boolean;
  /** RFC 9701: introspection answers to this client are always signed JWTs (with this algorithm). */
  introspectionSignedResponseAlg: string | null;
  /** OpenID Connect Registration 2: the algorithm of this client's ID tokens (the tenant's default when null). */
  idTokenSignedResponseAlg: string | null;
  canIntrospect: boolean;
  firstParty: boolean;
  accessTokenTtl: number | null;
  refreshTokenTtl: number | null;
  jwks: { keys: Array<Record<string, unknown>> } | null;
  permissions: string[];
  tenantScopes: TenantScope[];
  status: 'active' | 'disabled';
  /** Made through POST /register (RFC 7591). */
  registeredDynamically: boolean;
  createdAt: number;
  updatedAt: number;
}

/** A client as administration shows it: every column but the secret hash. */
export interface ClientRow {
  client_id: string; tenant_id: string; name: string; token_endpoint_auth_method: Client['authMethod']; grant_types: string[]; scopes: string[];
  redirect_uris: string[]; post_logout_redirect_uris: string[]; allowed_audiences: string[]; audience: string | null; strict_validation: boolean;
  can_introspect: boolean; first_party: boolean; dpop_bound_access_tokens: boolean; require_pushed_authorization_requests: boolean; introspection_signed_response_alg: string | null; id_token_signed_response_alg: string | null; access_token_ttl: number | null; refresh_token_ttl: number | null; jwks: Client['jwks'];
  permissions: string[]; tenant_scopes: Client['tenantScopes']; status: Client['status']; registered_dynamically: boolean; created_at: number; updated_at: number;
}

export type StoredRow = ClientRow & { secret_hash: Buffer | null };

export interface NewClient {
  clientId: string; name: string; secretHash: Buffer | null; authMethod?: Client['authMethod'] | undefined;
  grantTypes: string[]; scopes?: string[] | undefined; redirectUris?: string[] | undefined; postLogoutRedirectUris?: string[] | undefined;
  allowedAudiences?: string[] | undefined; audience?: string | null | undefined; strictValidation?: boolean | undefined;
  canIntrospect?: boolean | undefined; firstParty?: boolean | undefined; dpopBoundAccessTokens?: boolean | undefined; requirePushedAuthorizationRequests?: boolean | undefined; introspectionSignedResponseAlg?: string | null | undefined; idTokenSignedResponseAlg?: string | null | undefined; accessTokenTtl?: number | null | undefined;
  refreshTokenTtl?: number | null | undefined; jwks?: Client['jwks'] | undefined; permissions?: string[] | undefined;
  tenantScopes?: Client['tenantScopes'] | undefined; registeredDynamically?: boolean | undefined;
}

/** The fields an update may replace; absent ones keep their stored value. */
export interface ClientPatch {
  name?: string | undefined; grant_types?: string[] | undefined; scopes?: string[] | undefined; redirect_uris?: string[] | undefined;
  post_logout_redirect_uris?: string[] | undefined; allowed_audiences?: string[] | undefined; audience?: string | null | undefined;
  strict_validation?: boolean | undefined; can_introspect?: boolean | undefined; first_party?: boolean | undefined;
  dpop_bound_access_tokens?: boolean | undefined; require_pushed_authorization_requests?: boolean | undefined; introspection_signed_response_alg?: string | null | undefined; id_token_signed_response_alg?: string | null | undefined; access_token_ttl?: number | null | undefined; refresh_token_ttl?: number | null | undefined; jwks?: Client['jwks'] | undefined;
  permissions?: string[] | undefined; tenant_scopes?: Client['tenantScopes'] | undefined; status?: Client['status'] | undefined;
}

const COLS = (sql: Db) => sql`client_id, tenant_id, name, token_endpoint_auth_method, grant_types, scopes, redirect_uris, post_logout_redirect_uris,
  allowed_audiences, audience, strict_validation, can_introspect, first_party, dpop_bound_access_tokens, require_pushed_authorization_requests, introspection_signed_response_alg, id_token_signed_response_alg, access_token_ttl, refresh_token_ttl, jwks, permissions,
  tenant_scopes, status, registered_dynamically, created_at, updated_at`;

export function toClient(r: StoredRow): Client {
  return {
    clientId: r.client_id, tenantId: r.tenant_id, name: r.name, secretHash: r.secret_hash, authMethod: r.token_endpoint_auth_method,
    grantTypes: r.grant_types, scopes: r.scopes, redirectUris: r.redirect_uris, postLogoutRedirectUris: r.post_logout_redirect_uris,
    allowedAudiences: r.allowed_audiences, audience: r.audience, strictValidation: r.strict_validation, canIntrospect: r.can_introspect,
    firstParty: r.first_party, dpopBoundAccessTokens: r.dpop_bound_access_tokens, requirePushedAuthorizationRequests: r.require_pushed_authorization_requests, introspectionSignedResponseAlg: r.introspection_signed_response_alg, idTokenSignedResponseAlg: r.id_token_signed_response_alg, accessTokenTtl: r.access_token_ttl, refreshTokenTtl: r.refresh_token_ttl, jwks: r.jwks,
    permissions: r.permissions, tenantScopes: r.tenant_scopes, status: r.status, registeredDynamically: r.registered_dynamically, createdAt: Number(r.created_at), updatedAt: Number(r.updated_at),
  };
}


/** The OAuth clients of one tenant. */
export class ClientRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  /** Inserts a client; null when the client id is taken (in any tenant: client ids are global). */
  async insert(c: NewClient): Promise<Client | null> {
    const sql = this.db;
    const [row] = await sql<StoredRow[]>`
      insert into clients (client_id, tenant_id, name, secret_hash, token_endpoint_auth_method, grant_types, scopes, redirect_uris,
        post_logout_redirect_uris, allowed_audiences, audience, strict_validation, can_introspect, first_party, access_token_ttl,
        refresh_token_ttl, jwks, permissions, tenant_scopes, dpop_bound_access_tokens, require_pushed_authorization_requests, introspection_signed_response_alg, id_token_signed_response_alg, registered_dynamically)
      values (${c.clientId}, ${this.tenantId}, ${c.name}, ${c.secretHash}, ${c.authMethod ?? 'client_secret_basic'}, ${c.grantTypes},
        ${c.scopes ?? []}, ${c.redirectUris ?? []}, ${c.postLogoutRedirectUris ?? []}, ${c.allowedAudiences ?? []}, ${c.audience ?? null},
        ${c.strictValidation ?? false}, ${c.canIntrospect ?? false}, ${c.firstParty ?? false}, ${c.accessTokenTtl ?? null},
        ${c.refreshTokenTtl ?? null}, ${c.jwks ? sql.json(c.jwks as never) : null}, ${c.permissions ?? []}, ${sql.json((c.tenantScopes ?? []) as never)}, ${c.dpopBoundAccessTokens ?? false}, ${c.requirePushedAuthorizationRequests ?? false}, ${c.introspectionSignedResponseAlg ?? null}, ${c.idTokenSignedResponseAlg ?? null}, ${c.registeredDynamically ?? false})
      on conflict (client_id) do nothing
      returning *`;
    return row ? toClient(row) : null;
  }

  /** One client; `lock` takes its row lock for the rest of the transaction. */
  async get(clientId: string, lock = false): Promise<ClientRow | null> {
    const sql = this.db;
    const [row] = await sql<ClientRow[]>`select ${COLS(sql)} from clients
      where tenant_id = ${this.tenantId} and client_id = ${clientId} ${lock ? sql`for update` : sql``}`;
    return row ?? null;
  }

  /** Newest first, limit+1 rows; clients of machine principals are left out (they are listed with the principals). */
  list(f: { limit: number; cursor?: Cursor | undefined; status?: string | undefined; registered_dynamically?: boolean | undefined }): Promise<ClientRow[]> {
    const sql = this.db;
    return sql<ClientRow[]>`select ${COLS(sql)} from clients where tenant_id = ${this.tenantId}
        ${f.cursor ? sql`and (created_at, client_id) < (${f.cursor.createdAt}, ${f.cursor.id})` : sql``}
        ${f.status ? sql`and status = ${f.status}` : sql``}
        ${f.registered_dynamically !== undefined ? sql`and registered_dynamically = ${f.registered_dynamically}` : sql``}
        and not exists (select 1 from machine_principals mp where mp.tenant_id = ${this.tenantId} and mp.client_id = clients.client_id)
      order by created_at desc, client_id desc limit ${f.limit + 1}`;
  }

  /** Applies the given fields; null when there is no such client. */
  async update(clientId: string, p: ClientPatch): Promise<ClientRow | null> {
    const sql = this.db;
    const keep = <T>(v: T | undefined, col: string) => (v !== undefined ? v : sql(col)) as T;
    const [row] = await sql<ClientRow[]>`update clients set
        name = ${keep(p.name, 'name')}, grant_types = ${keep(p.grant_types, 'grant_types')},
        scopes = ${keep(p.scopes, 'scopes')}, redirect_uris = ${keep(p.redirect_uris, 'redirect_uris')},
        post_logout_redirect_uris = ${keep(p.post_logout_redirect_uris, 'post_logout_redirect_uris')},
        allowed_audiences = ${keep(p.allowed_audiences, 'allowed_audiences')}, audience = ${keep(p.audience, 'audience')},
        strict_validation = ${keep(p.strict_validation, 'strict_validation')}, can_introspect = ${keep(p.can_introspect, 'can_introspect')},
        first_party = ${keep(p.first_party, 'first_party')}, dpop_bound_access_tokens = ${keep(p.dpop_bound_access_tokens, 'dpop_bound_access_tokens')},
        require_pushed_authorization_requests = ${keep(p.require_pushed_authorization_requests, 'require_pushed_authorization_requests')},
        introspection_signed_response_alg = ${keep(p.introspection_signed_response_alg, 'introspection_signed_response_alg')},
        id_token_signed_response_alg = ${keep(p.id_token_signed_response_alg, 'id_token_signed_response_alg')}, access_token_ttl = ${keep(p.access_token_ttl, 'access_token_ttl')},
        refresh_token_ttl = ${keep(p.refresh_token_ttl, 'refresh_token_ttl')},
        jwks = ${p.jwks !== undefined ? (p.jwks === null ? null : sql.json(p.jwks as never)) : sql`jwks`},
        permissions = ${keep(p.permissions, 'permissions')},
        tenant_scopes = ${p.tenant_scopes !== undefined ? sql.json(p.tenant_scopes as never) : sql`tenant_scopes`},
        status = ${keep(p.status, 'status')}, updated_at = now_ms()
      where tenant_id = ${this.tenantId} and client_id = ${clientId} returning ${COLS(sql)}`;
    return row ?? null;
  }

  /**
   * Adds URIs and audiences a client lacks (those it has, and their order, stay); false when there is no
   * such client. Bootstrap under a new ISSUER keeps its demo clients working at the new address.
   */
  async addAddresses(clientId: string, add: { redirectUris?: string[]; postLogoutRedirectUris?: string[]; allowedAudiences?: string[] }): Promise<boolean> {
    const sql = this.db;
    const merge = (col: string, values: string[] | undefined) => sql`${sql(col)} || array(select v from unnest(${values ?? []}::text[]) v where v <> all(${sql(col)}))`;
    const r = await sql`update clients set redirect_uris = ${merge('redirect_uris', add.redirectUris)},
        post_logout_redirect_uris = ${merge('post_logout_redirect_uris', add.postLogoutRedirectUris)},
        allowed_audiences = ${merge('allowed_audiences', add.allowedAudiences)}, updated_at = now_ms()
      where tenant_id = ${this.tenantId} and client_id = ${clientId}`;
    return r.count === 1;
  }

  /** Replaces the keyed hash of the client's secret; false when there is no such client. */
  async setSecretHash(clientId: string, hash: Buffer): Promise<boolean> {
    const r = await this.db`update clients set secret_hash = ${hash}, updated_at = now_ms() where tenant_id = ${this.tenantId} and client_id = ${clientId}`;
    return r.count === 1;
  }

  async delete(clientId: string): Promise<ClientRow | null> {
    const sql = this.db;
    const [row] = await sql<ClientRow[]>`delete from clients where tenant_id = ${this.tenantId} and client_id = ${clientId} returning ${COLS(sql)}`;
    return row ?? null;
  }

  /** True when a machine access principal owns this client (it is then managed through the principal). */
  async ownedByPrincipal(clientId: string): Promise<boolean> {
    const [row] = await this.db`select 1 from machine_principals where tenant_id = ${this.tenantId} and client_id = ${clientId}`;
    return !!row;
  }

  /** Ends every refresh token issued to a client (disable, delete); how many were active. */
  async revokeRefreshTokens(clientId: string): Promise<number> {
    const r = await this.db`update refresh_tokens set status = 'revoked' where tenant_id = ${this.tenantId} and client_id = ${clientId} and status = 'active'`;
    return r.count;
  }
}
