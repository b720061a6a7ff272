import { createHash } from 'node:crypto';
import type { Client } from '../clients/model.js';
import { authenticateClient } from '../clients/authenticate.js';
import type { Deps } from '../deps.js';
import { OAuthError } from '../errors.js';
import type { Route } from '../http/types.js';
import { decodeJwt } from 'jose';
import { JwtError, type JwtPayload } from '../tokens/jwt.js';
import { redisKeys } from '../store/redis-keys.js';
import { findRefreshToken, looksLikeRefreshToken } from '../tokens/refresh-tokens.js';
import { NO_STORE, type Form } from './params.js';

const INACTIVE = '{"active":false}';
const CACHE_TTL = 60;

/**
 * POST /introspect (RFC 7662) in the spec's order: client authentication, JWT decode and signature,
 * exp, revocation, then strictValidation. Active answers are cached for 60 s per token and asking
 * client; the revocation check runs on every call, cache hits included, in the same Redis round trip.
 */
export function introspectRoutes(deps: Deps): Route[] {
  const endpoint = `${deps.config.issuer}/introspect`;
  const { tokens, redis } = deps;
  const reply = (body: string) => ({ headers: NO_STORE, type: 'application/json', body });

  async function introspectJwt(rs: Client, token: string): Promise<string> {
    let claims: JwtPayload;
    // Unverified claims, only to find the revocation state and the cached answer (jose: within 5% here, perf/RESULTS.md 33).
    try { claims = decodeJwt(token) as JwtPayload; } catch { return INACTIVE; }
    // Clock tolerance is for tokens minted elsewhere; ours expire exactly at exp, cached answers included.
    if (!(Number(claims.exp) * 1000 > Date.now())) return INACTIVE;
    const cacheKey = redisKeys.introspection(rs.clientId, createHash('sha256').update(token).digest('base64url'));
    // One command: the revocation state and the cached answer, read together.
    const { revoked: revokedMark, tenantRefused, extra: cached } = await tokens.revocations.lookup(
      { jti: String(claims.jti ?? ''), tenant: String(claims.tenant ?? ''), sub: claims.sub, client_id: claims.client_id, iat: claims.iat }, cacheKey);
    // A suspended tenant's tokens are inactive while it is suspended (read in the same command).
    const revoked = revokedMark || tenantRefused;
    if (cached !== null) {
      // The cache entry never outlives exp; a revoked token or a disabled client is inactive at once.
      if (revoked || !(await activeIssuer(claims))) return INACTIVE;
      return cached;
    }
    let payload: JwtPayload;
    try { payload = await tokens.accessTokens.verifyAsync(token); } catch (err) { if (err instanceof JwtError) return INACTIVE; throw err; }
    if (revoked) return INACTIVE;
    if (payload.tenant !== rs.tenantId) return INACTIVE;
    const issuedTo = await activeIssuer(payload);
    if (!issuedTo) return INACTIVE;
    if (rs.strictValidation && !strictlyValid(rs, issuedTo, payload)) return INACTIVE;
    const answer = JSON.stringify(activeAnswer(payload));
    const ttl = Math.min(CACHE_TTL, Number(payload.exp) - Math.floor(Date.now() / 1000));
    if (ttl > 0) redis.set(cacheKey, answer, 'EX', ttl).catch(() => {}); // not awaited: a cache write failure costs nothing
    return answer;
  }

  /** The client the token was issued to, when it is still active in the token's tenant; otherwise null. */
  async function activeIssuer(p: JwtPayload): Promise<Client | null> {
    const c = await tokens.clients.get(String(p.client_id ?? ''));
    return c && c.status === 'active' && c.tenantId === p.tenant ? c : null;
  }

  /** strictValidation: the token names this resource server as audience, and was issued to a client allowed to call it. */
  function strictlyValid(rs: Client, issuedTo: Client, p: JwtPayload): boolean {
    if (!rs.audience) return false;
    const aud = Array.isArray(p.aud) ? p.aud : [p.aud];
    if (!aud.includes(rs.audience)) return false;
    return issuedTo.allowedAudiences.includes(rs.audience) || issuedTo.clientId === rs.clientId;
  }

  async function introspectRefresh(rs: Client, token: string): Promise<string> {
    const r = await findRefreshToken(deps.sql, rs.tenantId, token);
    if (!r || r.status !== 'active' || Number(r.expires_at) <= Date.now() || r.tenant_id !== rs.tenantId) return INACTIVE;
    if (rs.strictValidation && r.client_id !== rs.clientId) return INACTIVE;
    return JSON.stringify({ active: true, sub: r.sub, scope: r.scope, client_id: r.client_id, token_type: 'refresh_token', exp: Math.floor(Number(r.expires_at) / 1000), iss: deps.config.issuer, tenant: r.tenant_id });
  }

  return [{
    method: 'POST', path: '/introspect', iface: 'oauth', body: 'form', bodySchema: 'form.introspect',
    doc: { summary: 'Token introspection (RFC 7662) with revocation check and strictValidation', tags: ['oauth'], security: 'basic', responses: { 200: 'oauth.introspection-response' }, errors: [400, 401, 403, 503] },
    handler: async (req) => {
      const form = req.data as Form;
      const rs = await authenticateClient({ clients: tokens.clients, redis, secretKey: tokens.secretKey, issuer: deps.config.issuer, endpoint }, req, form);
      if (!rs.canIntrospect) throw new OAuthError('unauthorized_client', 'The client may not introspect tokens.', 403);
      const token = form.token as string;
      // token_type_hint only orders the lookups (RFC 7662 2.1); both kinds are tried.
      const refreshFirst = form.token_type_hint === 'refresh_token' || looksLikeRefreshToken(token);
      const answer = refreshFirst && looksLikeRefreshToken(token) ? await introspectRefresh(rs, token) : await introspectJwt(rs, token);
      deps.logs?.tokenDecision(rs.tenantId, { decision: 'introspect', client_id: rs.clientId, active: answer !== INACTIVE, token_kind: refreshFirst ? 'refresh_token' : 'access_token' });
      return reply(answer);
    },
  }];
}

/** The claims an active answer carries. */
export function activeAnswer(p: JwtPayload): Record<string, unknown> {
  const out: Record<string, unknown> = {
    active: true, sub: p.sub, scope: p.scope ?? '', client_id: p.client_id, token_type: 'Bearer', exp: p.exp, iat: p.iat,
    iss: p.iss, aud: p.aud, jti: p.jti, tenant: p.tenant,
  };
  if (p.act !== undefined) out.act = p.act;
  if (p.resource !== undefined) out.resource = p.resource;
  if (p.permissions !== undefined) out.permissions = p.permissions;
  if (p.authorization_details !== undefined) out.authorization_details = p.authorization_details;
  return out;
}
