import { GRANT } from '../../clients/model.js';
import { one } from '../params.js';
import { scopeForAudience } from '../resource-indicators.js';
import { audClaim, bindTo, narrowScope, resolveTargets, tokenType, ttlFor, type Grant } from './grant.js';

/** RFC 6749 4.4. Machine principals' tokens also carry their permissions and tenant scopes. */
export const clientCredentials: Grant = {
  type: GRANT.clientCredentials,
  params: ['scope', 'audience', 'resource'],
  shedWhenBusy: true,
  async handle(deps, client, form, _ahead, binding) {
    const requested = one(form, 'scope');
    const { aud, resource } = resolveTargets(client, form, deps.config.issuer);
    const scope = await scopeForAudience(deps, client.tenantId, aud, narrowScope(requested, client.scopes), requested !== undefined);
    const extra: Record<string, unknown> = {};
    if (resource.length) extra.resource = resource.length === 1 ? resource[0] : resource;
    if (client.permissions.length) extra.permissions = client.permissions;
    if (client.tenantScopes.length) extra.tenant_scopes = client.tenantScopes;
    const ttl = (await ttlFor(deps, client));
    const t = await deps.tokens.accessTokens.issue({ tenant: client.tenantId, sub: client.clientId, clientId: client.clientId, aud: audClaim(aud), scope, ttlSeconds: ttl, extra: bindTo(extra, binding) }, deps.trace);
    return { access_token: t.token, token_type: tokenType(binding), expires_in: ttl, scope };
  },
};
