import { adminAudience, ADMIN_SCOPE } from '../admin-access.js';
import { GRANT } from '../clients/model.js';
import type { TenantStore } from '../store/index.js';
import type { NewPrincipal, PrincipalRepository } from '../store/principals.js';
import { jwksOf, type CredentialRow, type PrincipalRow } from './model.js';

/**
 * Creates a principal and its backing client through the tenant's store (bound to the caller's
 * transaction). The client authenticates with private_key_jwt only and obtains admin tokens (audience
 * adminAudience, scope admin) by client_credentials, living tokenTtlSeconds and carrying the principal's
 * permissions and tenant scopes.
 */
export async function createPrincipal(store: TenantStore, issuer: string, p: NewPrincipal): Promise<PrincipalRow> {
  const client = await store.clients.insert({
    clientId: p.clientId, name: p.displayName, secretHash: null, authMethod: 'private_key_jwt', grantTypes: [GRANT.clientCredentials],
    scopes: [ADMIN_SCOPE], allowedAudiences: [adminAudience(issuer)], accessTokenTtl: p.tokenTtlSeconds, jwks: { keys: [] },
    permissions: p.permissions, tenantScopes: p.tenantScopes,
  });
  if (!client) throw new Error('principal client id collision');
  return store.principals.insert(p);
}

/** Re-derives the backing client (jwks from usable credentials, permissions, status) from the principal. */
export async function resyncPrincipal(principals: PrincipalRepository, principalId: string): Promise<{ principal: PrincipalRow; credentials: CredentialRow[] } | null> {
  const principal = await principals.get(principalId);
  if (!principal) return null;
  const credentials = await principals.credentialsOf([principal.id]);
  await principals.syncClient(principal, jwksOf(principal.status === 'active' ? credentials : []));
  return { principal, credentials };
}
