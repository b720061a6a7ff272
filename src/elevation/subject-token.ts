import { GRANT, type Client } from '../clients/model.js';
import type { Deps } from '../deps.js';
import { NotFound, ValidationError } from '../errors.js';
import type { ApprovalRequestRow, ElevationGrantRow } from '../store/approvals.js';
import type { TenantStore } from '../store/index.js';
import { newJti } from '../tokens/jti.js';
import { TOKEN_TYPES } from '../tokens/jwt.js';

export const ELEVATION_TOKEN_TYPE = 'urn:svc:params:oauth:token-type:elevation-grant';
export const EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

/**
 * The client a subject token may be issued to: one of the tenant's active clients holding the
 * token-exchange grant (else 404 client_not_found), allowed to obtain tokens for the grant's audience.
 */
export async function exchangingClient(deps: Deps, tenantId: string, clientId: string, audience: string): Promise<Client> {
  const c = await deps.tokens.clients.get(clientId);
  if (!c || c.tenantId !== tenantId || c.status !== 'active' || !c.grantTypes.includes(GRANT.tokenExchange)) {
    throw new NotFound('client_not_found', 'No client of this tenant may exchange elevation tokens under this id.');
  }
  if (!c.allowedAudiences.includes(audience)) throw new ValidationError({ client_id: [`may not obtain tokens for the grant's audience ${JSON.stringify(audience)}`] });
  return c;
}

/**
 * Signs an elevation subject token (typ svc-elevation+jwt) for one client: sub is the target, aud the
 * client that will exchange it, act the requester, and its jti (the spec's sharded format) is recorded
 * against the grant so revoking the grant revokes it.
 */
export async function issueSubjectToken(deps: Deps, store: TenantStore, r: ApprovalRequestRow, g: ElevationGrantRow, client: Client, ttl: number) {
  const iat = Math.floor(Date.now() / 1000);
  const exp = iat + ttl;
  const gen = deps.tokens.sharding.current(client.clientId);
  const jti = newJti(gen.generation, deps.config.region, gen.shardCount);
  const token = await deps.tokens.signer.sign(store.tenantId, { typ: TOKEN_TYPES.elevation }, {
    iss: deps.config.issuer, sub: r.target_subject_id, aud: client.clientId, iat, exp, jti, tenant: store.tenantId, client_id: client.clientId,
    grant_id: g.id, request_id: r.id, investigation_id: r.investigation_id, act: { sub: r.requester_id },
    authorization_details: g.authorization_details,
  });
  await store.approvals.recordToken({ grant_id: g.id, jti, kind: 'subject', client_id: client.clientId, expires_at: exp * 1000 });
  return {
    grant_id: g.id, request_id: r.id, investigation_id: r.investigation_id, subject_token: token, subject_token_type: ELEVATION_TOKEN_TYPE,
    expires_in: ttl, authorization_details: g.authorization_details,
    token_exchange_hint: { grant_type: EXCHANGE_GRANT, subject_token_type: ELEVATION_TOKEN_TYPE, requested_token_type: ACCESS_TOKEN_TYPE, client_id: client.clientId },
    integration_hint: { audience: g.audience },
  };
}
