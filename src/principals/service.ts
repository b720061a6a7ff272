import { adminAudience, ADMIN_SCOPE } from '../admin/context.js';
import { GRANT } from '../clients/model.js';
import { insertClient } from '../clients/repository.js';
import type { Sql, TxSql } from '../store/sql.js';
import { jwksOf, type CredentialRow, type PrincipalRow } from './model.js';
import { credentialsOf, getPrincipal, insertPrincipal, syncPrincipalClient, type NewPrincipal } from './repository.js';

/**
 * Creates a principal and its backing client in the caller's transaction. The client authenticates
 * with private_key_jwt only and obtains admin tokens (audience adminAudience, scope admin) by
 * client_credentials, living tokenTtlSeconds and carrying the principal's permissions and tenant scopes.
 */
export async function createPrincipal(tx: TxSql, issuer: string, tenantId: string, p: NewPrincipal): Promise<PrincipalRow> {
  const client = await insertClient(tx as unknown as Sql, {
    clientId: p.clientId, tenantId, name: p.displayName, secretHash: null, authMethod: 'private_key_jwt', grantTypes: [GRANT.clientCredentials],
    scopes: [ADMIN_SCOPE], allowedAudiences: [adminAudience(issuer)], accessTokenTtl: p.tokenTtlSeconds, jwks: { keys: [] },
    permissions: p.permissions, tenantScopes: p.tenantScopes,
  });
  if (!client) throw new Error('principal client id collision');
  return insertPrincipal(tx, tenantId, p);
}

/** Re-derives the backing client (jwks from usable credentials, permissions, status) from the principal. */
export async function resyncPrincipal(tx: Sql | TxSql, tenantId: string, principalId: string): Promise<{ principal: PrincipalRow; credentials: CredentialRow[] } | null> {
  const principal = await getPrincipal(tx, tenantId, principalId);
  if (!principal) return null;
  const credentials = await credentialsOf(tx, tenantId, [principal.id]);
  await syncPrincipalClient(tx, principal, jwksOf(principal.status === 'active' ? credentials : []));
  return { principal, credentials };
}
