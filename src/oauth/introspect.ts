import { sha256b64url } from '../tokens/secrets.js';
import type { Client } from '../clients/model.js';
import { authenticateClient, claimedClientId, clientAuthContext, failureBudgetKey } from '../clients/authenticate.js';
import type { Deps } from '../deps.js';
import { OAuthError, Overloaded } from '../errors.js';
import type { Route } from '../http/types.js';
import { decodeJwt } from 'jose';
import { decodeJwt as decodeOwnJwt, JwtError, type JwtPayload } from '../tokens/jwt.js';
import { redisKeys } from '../store/redis-keys.js';
import { readAhead, type ReadAhead } from '../tokens/read-ahead.js';
import { revocationSubject } from '../tokens/revocation.js';
import { findRefreshToken, looksLikeRefreshToken } from '../tokens/refresh-tokens.js';
import { NO_STORE, type Form } from './params.js';
import { cacheCounters } from '../metrics.js';
import { depsFor } from '../request-deps.js';

const INACTIVE = '{"active":false}';
const INTROSPECTION_JWT = 'application/token-introspection+jwt';

/** A signed answer when the client asks for one (Accept, RFC 9701 4) or registered for it (RFC 9701 6); plain JSON otherwise. */
function wantsJwt(accept: string | undefined, rs: Client): boolean {
  return rs.introspectionSignedResponseAlg !== null || (accept !== undefined && accept.includes(INTROSPECTION_JWT));
}
const CACHE_TTL = 60;
/** Hits and misses of the per-token answer cache in Redis (svc_cache_requests_total{cache="introspection"}). */
const introspectionCache = cacheCounters('introspection');
// Clock tolerance is for tokens minted elsewhere; ours expire exactly at exp, cached answers included.
const unexpired = (claims: JwtPayload) => Number(claims.exp) * 1000 > Date.now();

/**
 * POST /introspect (RFC 7662) in the spec's order: client authentication, JWT decode and signature,
 * exp, revocation, then strictValidation. Active answers are cached for 60 s per token and asking
 * client; the revocation check runs on every call, cache hits included, in the same Redis round trip.
 * A hit is honoured only while the key ring still verifies the entry's kid for the token's tenant (in memory).
 */
export function introspectRoutes(deps: Deps): Route[] {
  const endpoint = `${deps.config.issuer}/introspect`;
  const { tokens } = deps;
  const authCtx = clientAuthContext(deps, endpoint);
  const reply = (body: string) => ({ headers: NO_STORE, type: 'application/json', body });

  const cacheKeyOf = (clientId: string, token: string) => redisKeys.introspection(clientId, sha256b64url(token));

  async function introspectJwt(rs: Client, token: string, ahead: ReadAhead | undefined, d: Deps): Promise<string> {
    let claims: JwtPayload;
    // Unverified claims, only to find the revocation state and the cached answer (jose: within 5% here, perf/RESULTS.md 33).
    if (ahead) claims = ahead.claims;
    else try { claims = decodeJwt(token) as JwtPayload; } catch { return INACTIVE; }
    if (!unexpired(claims)) return INACTIVE;
    // One command: the revocation state and the cached answer, read together, and started with client
    // authentication's read when the request named its client (src/tokens/read-ahead.ts).
    const { revoked: revokedMark, tenantRefused, extras } = await (ahead?.state ?? tokens.revocations.lookup(revocationSubject(claims), [cacheKeyOf(rs.clientId, token)], d.trace));
    const cached = extras?.[0] ?? null;
    // A suspended tenant's tokens are inactive while it is suspended (read in the same command).
    const revoked = revokedMark || tenantRefused;
    // An entry is "<kid> <answer>" (the kid has no space; anything else is a miss).
    const sep = cached === null ? -1 : cached.indexOf(' ');
    if (cached !== null && sep > 0) {
      introspectionCache.hit.inc();
      // The cache entry never outlives exp; a revoked token or a disabled client is inactive at once, and
      // so is a token whose key the ring no longer verifies for its tenant (dropped past its verification
      // window, or the tenant moved off the deployment's keys): the same in-memory check as a miss's.
      if (revoked || !tokens.keys.verifyKeyFor(cached.slice(0, sep), claims.tenant) || !(await activeIssuer(claims))) return INACTIVE;
      return cached.slice(sep + 1);
    }
    introspectionCache.miss.inc();
    let payload: JwtPayload;
    try { payload = await tokens.accessTokens.verifyAsync(token, claims, d.trace); } catch (err) { if (err instanceof JwtError) return INACTIVE; throw err; }
    if (revoked) return INACTIVE;
    if (payload.tenant !== rs.tenantId) return INACTIVE;
    const issuedTo = await activeIssuer(payload);
    if (!issuedTo) return INACTIVE;
    if (rs.strictValidation && !strictlyValid(rs, issuedTo, payload)) return INACTIVE;
    const answer = JSON.stringify(activeAnswer(payload));
    const ttl = Math.min(CACHE_TTL, Number(payload.exp) - Math.floor(Date.now() / 1000));
    // The entry names the verifying key (the header's kid, which verifyAsync just checked) for the hit's key check.
    if (ttl > 0) d.redis.set(cacheKeyOf(rs.clientId, token), `${String(decodeOwnJwt(token, payload).header.kid)} ${answer}`, 'EX', ttl).catch(() => {}); // not awaited: a cache write failure costs nothing
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

  async function introspectRefresh(rs: Client, token: string, d: Deps): Promise<string> {
    const r = await findRefreshToken(d.sql, rs.tenantId, token);
    if (!r || r.status !== 'active' || Number(r.expires_at) <= Date.now() || r.tenant_id !== rs.tenantId) return INACTIVE;
    if (rs.strictValidation && r.client_id !== rs.clientId) return INACTIVE;
    return JSON.stringify({ active: true, sub: r.sub, scope: r.scope, client_id: r.client_id, token_type: 'refresh_token', exp: Math.floor(Number(r.expires_at) / 1000), iss: deps.config.issuer, tenant: r.tenant_id });
  }

  /**
   * RFC 9701: the answer as a JWT signed with the tenant's key (of the client's registered algorithm when the tenant enables it), for the introspecting client (aud is its
   * client_id, which openid-client and oauth4webapi check). Signing goes through the signing pool and its
   * admission, so a flood of signed introspections is refused at once rather than queued; the plain JSON
   * answer stays the fast path.
   */
  async function signedReply(rs: Client, answer: string, d: Deps) {
    const signer = tokens.signer;
    if (!signer.admit()) throw new Overloaded(undefined, 'crypto_queue');
    try {
      const jwt = await signer.sign(rs.tenantId, { typ: 'token-introspection+jwt' }, {
        iss: deps.config.issuer, aud: rs.clientId, iat: Math.floor(Date.now() / 1000), token_introspection: JSON.parse(answer) as Record<string, unknown>,
      }, rs.introspectionSignedResponseAlg, d.trace);
      return { headers: NO_STORE, type: INTROSPECTION_JWT, body: jwt };
    } finally { signer.release(); }
  }

  return [{
    method: 'POST', path: '/introspect', iface: 'oauth', body: 'form', bodySchema: 'form.introspect',
    doc: { summary: 'Token introspection (RFC 7662) with revocation check and strictValidation; with Accept: application/token-introspection+jwt a signed JWT answer (RFC 9701)', tags: ['oauth'], security: 'basic', responses: { 200: 'oauth.introspection-response' }, errors: [400, 401, 403, 503] },
    handler: async (req) => {
      // A sampled request's view (its clients make spans under it); the process's deps otherwise.
      const d = depsFor(deps, req);
      const form = req.data as Form;
      const token = form.token as string;
      // token_type_hint only orders the lookups (RFC 7662 2.1); both kinds are tried.
      const refreshFirst = form.token_type_hint === 'refresh_token' || looksLikeRefreshToken(token);
      const refresh = refreshFirst && looksLikeRefreshToken(token);
      // The token's read goes out with client authentication's; its answer is used only for the client it was read for.
      const claimed = refresh ? undefined : claimedClientId(req, form);
      const ahead = claimed === undefined ? undefined
        : readAhead(tokens.revocations, token, { worth: unexpired, extraKey: cacheKeyOf(claimed, token), failuresKey: failureBudgetKey(claimed, req.ip), trace: d.trace });
      const rs = await authenticateClient(authCtx, req, form, ahead?.failures);
      if (!rs.canIntrospect) throw new OAuthError('unauthorized_client', 'The client may not introspect tokens.', 403);
      const answer = refresh ? await introspectRefresh(rs, token, d) : await introspectJwt(rs, token, rs.clientId === claimed ? ahead : undefined, d);
      deps.logs?.tokenDecision(rs.tenantId, { decision: 'introspect', client_id: rs.clientId, active: answer !== INACTIVE, token_kind: refreshFirst ? 'refresh_token' : 'access_token' });
      if (wantsJwt(req.headers.accept, rs)) return signedReply(rs, answer, d);
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
  // RFC 9449 6.2: the resource server checks the presenter's proof against this key.
  if (p.cnf !== undefined) { out.cnf = p.cnf; out.token_type = 'DPoP'; }
  return out;
}
