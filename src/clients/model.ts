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
  canIntrospect: boolean;
  firstParty: boolean;
  accessTokenTtl: number | null;
  refreshTokenTtl: number | null;
  jwks: { keys: Array<Record<string, unknown>> } | null;
  permissions: string[];
  tenantScopes: TenantScope[];
  status: 'active' | 'disabled';
  createdAt: number;
  updatedAt: number;
}

/** Which tenants an admin token of the client may act on (spec: tenant_scopes). */
export interface TenantScope { scope_mode: 'none' | 'all' | 'allow'; tenant_id: string | null }

/** Tenant scopes as stored: a request may leave out tenant_id, the stored form always has it (null). */
export function storedScopes(scopes: ReadonlyArray<{ scope_mode: TenantScope['scope_mode']; tenant_id?: string | null | undefined }>): TenantScope[] {
  return scopes.map((s) => ({ scope_mode: s.scope_mode, tenant_id: s.tenant_id ?? null }));
}

export const GRANT = {
  clientCredentials: 'client_credentials',
  tokenExchange: 'urn:ietf:params:oauth:grant-type:token-exchange',
  refreshToken: 'refresh_token',
  authorizationCode: 'authorization_code',
} as const;
