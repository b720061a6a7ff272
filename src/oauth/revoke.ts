import { depsFor } from '../request-deps.js';
import { authenticateClient, clientAuthContext } from '../clients/authenticate.js';
import type { Deps } from '../deps.js';
import { OAuthError } from '../errors.js';
import type { Route } from '../http/types.js';
import { JwtError, type JwtPayload } from '../tokens/jwt.js';
import { findRefreshToken, looksLikeRefreshToken, revokeFamily } from '../tokens/refresh-tokens.js';
import { NO_STORE, type Form } from './params.js';

/**
 * POST /revoke (RFC 7009). The client may revoke only tokens issued to it; an unknown, malformed or
 * expired token is answered 200 as the RFC requires. A refresh token takes its whole family with it.
 */
export function revokeRoutes(base: Deps): Route[] {
  const authCtx = clientAuthContext(base, `${base.config.issuer}/revoke`);
  const { tokens } = base;
  return [{
    method: 'POST', path: '/revoke', iface: 'oauth', body: 'form', bodySchema: 'form.introspect',
    doc: { summary: 'Token revocation (RFC 7009) for access and refresh tokens', tags: ['oauth'], security: 'basic', errors: [400, 401, 503] },
    handler: async (req) => {
      // A sampled request's view (its clients make spans under it); the process's deps otherwise.
      const deps = depsFor(base, req);
      const form = req.data as Form;
      const client = await authenticateClient(authCtx, req, form);
      const token = form.token as string;
      if (looksLikeRefreshToken(token)) {
        const r = await findRefreshToken(deps.sql, client.tenantId, token);
        if (r && r.tenant_id === client.tenantId) {
          if (r.client_id !== client.clientId) throw new OAuthError('unauthorized_client', 'The token was not issued to this client.');
          const jtis = await revokeFamily(deps.sql, r.tenant_id, r.family_id);
          const until = Math.floor(Date.now() / 1000) + 86_400;
          await Promise.all(jtis.map((j) => tokens.revocations.revoke(r.tenant_id, j, until, deps.trace)));
          deps.logs?.tokenDecision(client.tenantId, { decision: 'revoke', client_id: client.clientId, token_kind: 'refresh_token', revoked: jtis.length });
        }
        return { status: 200, headers: NO_STORE };
      }
      let p: JwtPayload;
      try { p = tokens.accessTokens.verify(token); } catch (err) {
        if (err instanceof JwtError) return { status: 200, headers: NO_STORE };
        throw err;
      }
      if (p.tenant !== client.tenantId) return { status: 200, headers: NO_STORE };
      if (p.client_id !== client.clientId) throw new OAuthError('unauthorized_client', 'The token was not issued to this client.');
      await tokens.revocations.revoke(client.tenantId, String(p.jti), Number(p.exp), deps.trace);
      deps.logs?.tokenDecision(client.tenantId, { decision: 'revoke', client_id: client.clientId, token_kind: 'access_token', jti: String(p.jti) });
      return { status: 200, headers: NO_STORE };
    },
  }];
}
