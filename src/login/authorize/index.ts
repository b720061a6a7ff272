import type { Client } from '../../clients/model.js';
import type { Deps } from '../../deps.js';
import type { Requirements } from '../../tenants/security-profile.js';
import { checkClientDeferred } from './check-client.js';
import { checkPkce } from './check-pkce.js';
import { checkPrompt } from './check-prompt.js';
import { checkRedirectUri } from './check-redirect-uri.js';
import { checkResource } from './check-resource.js';
import { checkResponseType } from './check-response-type.js';
import { checkScope } from './check-scope.js';
import { param, RedirectableError, type AuthorizationRequest, type Query } from './types.js';

export { PageError, RedirectableError, type AuthorizationRequest, type Query } from './types.js';

const JKT = /^[A-Za-z0-9_-]{43}$/;

/** The first two checks: until they pass there is nowhere safe to send an error. */
export async function trustedTarget(deps: Deps, q: Query): Promise<{ client: Client; redirectUri: string; given: boolean; tenantCheck: Promise<void> }> {
  const { client, tenantCheck } = await checkClientDeferred(deps, q);
  let target;
  // A suspended tenant's 403 comes before any complaint about the redirect URI, as it always did.
  try { target = checkRedirectUri(client, q); } catch (err) { await tenantCheck; throw err; }
  return { client, redirectUri: target.redirectUri, given: target.given, tenantCheck };
}

/** The remaining checks, in order; each throws RedirectableError, which goes back to the redirect URI. */
export function validateRequest(client: Client, target: { redirectUri: string; given: boolean }, q: Query, need: Pick<Requirements, 'pkce'> = { pkce: client.authMethod === 'none' }, pushedId?: string): AuthorizationRequest {
  checkResponseType(client, q);
  const scope = checkScope(client, q);
  const resource = checkResource(client, q);
  const codeChallenge = checkPkce(client, q, need.pkce);
  const { prompt, maxAge } = checkPrompt(q);
  const bad = (m: string) => new RedirectableError('invalid_request', m);
  const dpopJkt = param(q, 'dpop_jkt', bad);
  if (dpopJkt !== undefined && !JKT.test(dpopJkt)) throw bad('dpop_jkt must be a base64url SHA-256 JWK thumbprint (43 characters).');
  return {
    tenantId: client.tenantId, clientId: client.clientId, redirectUri: target.redirectUri, redirectUriGiven: target.given,
    scope, state: param(q, 'state', bad), nonce: param(q, 'nonce', bad), codeChallenge, prompt, maxAge, loginHint: param(q, 'login_hint', bad),
    ...(dpopJkt !== undefined ? { dpopJkt } : {}), ...(resource.length ? { resource } : {}), ...(pushedId !== undefined ? { pushedId } : {}),
  };
}
