import type { PolicyFields, RegistrationPolicyRow } from '../store/registrations.js';

/**
 * What a tenant allows dynamic registration (RFC 7591) when its administrators have said nothing:
 * registration only with an initial access token, the authorization code flow only, the OpenID scopes,
 * no audiences (docs/decisions.md).
 */
export const DEFAULT_POLICY: PolicyFields = {
  open_registration: false,
  require_software_statement: false,
  allowed_grant_types: ['authorization_code', 'refresh_token'],
  allowed_scopes: ['openid', 'email', 'offline_access'],
  allowed_audiences: [],
  allowed_auth_methods: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'],
  max_clients: 100,
  rate_limit_per_minute: 20,
};

/** The tenant's policy, its stored row or the defaults. */
export function effectivePolicy(tenantId: string, row: RegistrationPolicyRow | null): RegistrationPolicyRow {
  return row ?? { tenant_id: tenantId, ...DEFAULT_POLICY, updated_at: null };
}

/** The policy as the admin API shows it. */
export function policyView(p: RegistrationPolicyRow): Record<string, unknown> {
  return {
    tenant_id: p.tenant_id, open_registration: p.open_registration, require_software_statement: p.require_software_statement,
    allowed_grant_types: p.allowed_grant_types, allowed_scopes: p.allowed_scopes, allowed_audiences: p.allowed_audiences,
    allowed_auth_methods: p.allowed_auth_methods, max_clients: p.max_clients, rate_limit_per_minute: p.rate_limit_per_minute,
    updated_at: p.updated_at === null ? null : Number(p.updated_at),
  };
}
