import type { TenantScope } from '../admin-access.js';

export type { Client } from '../store/clients.js';


export type { TenantScope };

/** Tenant scopes as stored: a request may leave out tenant_id, the stored form always has it (null). */
export function storedScopes(scopes: ReadonlyArray<{ scope_mode: TenantScope['scope_mode']; tenant_id?: string | null | undefined }>): TenantScope[] {
  return scopes.map((s) => ({ scope_mode: s.scope_mode, tenant_id: s.tenant_id ?? null }));
}

export const GRANT = {
  clientCredentials: 'client_credentials',
  tokenExchange: 'urn:ietf:params:oauth:grant-type:token-exchange',
  refreshToken: 'refresh_token',
  authorizationCode: 'authorization_code',
  deviceCode: 'urn:ietf:params:oauth:grant-type:device_code',
} as const;
