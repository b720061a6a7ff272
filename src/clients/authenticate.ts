import { hash, timingSafeEqual } from 'node:crypto';
import { Forbidden, OAuthError, ServiceUnavailable } from '../errors.js';
import { annotate } from '../tracing/tracer.js';
import type { HttpRequest } from '../http/request.js';
import type { Redis } from 'ioredis';
import { decodeJwt, decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';
import type { SigningAlg } from '../tokens/keys.js';
import { algorithmsFor, importFor, registeredKey } from './registered-keys.js';
import { redisKeys } from '../store/redis-keys.js';
import { refuseWhenSpent } from '../store/rate-limit.js';
import type { Sql } from '../sql.js';
import type { Logger } from '../log.js';
import type { Deps } from '../deps.js';
import { secretMatches } from '../tokens/secrets.js';
import type { ClientCache } from './cache.js';
import type { Client } from './model.js';
import { CLIENT_SECRET_FAILURES, failureBudgetKey, recordSecretFailure } from './secret-failures.js';

export { CLIENT_SECRET_FAILURES, failureBudgetKey } from './secret-failures.js';

export const JWT_BEARER_ASSERTION = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** Seconds an assertion may live (exp - now) and may be old (now - iat): its jti is remembered that long. */
const ASSERTION_MAX_LIFETIME = 600;
const ASSERTION_CLOCK_TOLERANCE = 5;

export interface ClientAuthContext {
  clients: ClientCache;
  redis: Redis;
  /** For the outbox (a `security.alert` when a client's secret fails from many addresses). */
  sql: Sql;
  log?: Logger;
  secretKey: Buffer;
  issuer: string;
  /** Where the assertion was sent (its aud may name the endpoint or the issuer). */
  endpoint: string;
}
import { tenantClassOf } from '../metrics.js';

/** The context of one endpoint's client authentication (built once per route). */
export function clientAuthContext(deps: Deps, endpoint: string): ClientAuthContext {
  return { clients: deps.tokens.clients, redis: deps.redis, sql: deps.sql, log: deps.log, secretKey: deps.tokens.secretKey, issuer: deps.config.issuer, endpoint };
}

const invalid = (why = 'Client authentication failed.') => new OAuthError('invalid_client', why);

/**
 * Authenticates the calling client by exactly one method: HTTP Basic (RFC 6749 2.3.1), client_secret_post,
 * or private_key_jwt (RFC 7523 section 3). Every failure is the same invalid_client answer.
 */
export function authenticateClient(ctx: ClientAuthContext, req: HttpRequest, form: Record<string, string | string[]>, failures?: Promise<string | null | undefined>): Promise<Client> {
  const client = authenticate(ctx, req, form, failures);
  // A sampled request's span learns its tenant and client (ids only); the others pay no extra step.
  const span = req.span;
  return span === undefined ? client : client.then((c) => { annotate({ 'svc.tenant_id': c.tenantId, 'oauth.client_id': c.clientId }, span); return c; });
}

async function authenticate(ctx: ClientAuthContext, req: HttpRequest, form: Record<string, string | string[]>, failures?: Promise<string | null | undefined>): Promise<Client> {
  const auth = req.headers.authorization;
  const assertion = form.client_assertion;
  const postSecret = form.client_secret;
  const methods = (auth?.startsWith('Basic ') ? 1 : 0) + (assertion !== undefined ? 1 : 0) + (postSecret !== undefined ? 1 : 0);
  if (methods === 0) {
    // Public clients (token_endpoint_auth_method none) identify themselves with client_id only; PKCE protects their codes.
    const pub = typeof form.client_id === 'string' ? await ctx.clients.get(form.client_id) : null;
    if (pub?.authMethod === 'none' && pub.status === 'active') return classify(req, pub);
    throw invalid('Client authentication is required.');
  }
  if (methods > 1) throw new OAuthError('invalid_request', 'Use exactly one client authentication method.');

  if (auth?.startsWith('Basic ')) {
    const basic = basicOf(req, auth);
    if (!basic) throw invalid();
    return checkSecret(ctx, req, basic.id, basic.secret, failures);
  }
  if (postSecret !== undefined) {
    if (typeof form.client_id !== 'string' || typeof postSecret !== 'string') throw invalid();
    return checkSecret(ctx, req, form.client_id, postSecret, failures);
  }
  if (form.client_assertion_type !== JWT_BEARER_ASSERTION || typeof assertion !== 'string') throw invalid('Unsupported client assertion type.');
  return checkAssertion(ctx, req, assertion, typeof form.client_id === 'string' ? form.client_id : undefined);
}

/** The request's tenant class for svc_http_requests_by_tenant_class_total, once its client is known. */
function classify(req: HttpRequest, c: Client): Client {
  req.tenantClass = tenantClassOf(c.tenantId);
  return c;
}

/** The id and secret of an HTTP Basic header (RFC 6749 2.3.1: each form-urlencoded), or null when malformed. */
function basicCredentials(auth: string): { id: string; secret: string } | null {
  const decoded = Buffer.from(auth.slice(6), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 1) return null;
  try {
    return { id: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')), secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')) };
  } catch { return null; }
}

// The last request's parsed Basic header, held by request identity: claimedClientId and
// authenticateClient parse the same header one after the other (and a secret is never compared here).
let parsedFor: HttpRequest | undefined;
let parsed: ReturnType<typeof basicCredentials> = null;
function basicOf(req: HttpRequest, auth: string): ReturnType<typeof basicCredentials> {
  if (parsedFor !== req) { parsed = basicCredentials(auth); parsedFor = req; }
  return parsed;
}

/**
 * The client id a secret-authenticated request claims, before anything is checked: for work that may
 * start early but whose result is used only once authenticateClient has confirmed this very id. The
 * failure budget read in that work (`failures`) is this same id's (and the request's client address's,
 * failureBudgetKey(id, req.ip)), as checkSecret parses the same header.
 */
export function claimedClientId(req: HttpRequest, form: Record<string, string | string[]>): string | undefined {
  const auth = req.headers.authorization;
  if (auth?.startsWith('Basic ')) return basicOf(req, auth)?.id;
  return typeof form.client_id === 'string' ? form.client_id : undefined;
}

/**
 * The client a request claims by any method, before anything is checked: the id a secret names, or a
 * client assertion's issuer. A DPoP proof's replay record is written under it (src/dpop/token-request.ts)
 * and accepted only when authentication confirms the same client.
 */
export function proofClaimant(req: HttpRequest, form: Record<string, string | string[]>): string | undefined {
  const claimed = claimedClientId(req, form);
  if (claimed !== undefined || typeof form.client_assertion !== 'string') return claimed;
  try { const iss = decodeJwt(form.client_assertion).iss; return typeof iss === 'string' ? iss : undefined; } catch { return undefined; }
}

// The digest of the secret that last passed the keyed-hash check, per cached client record. The
// client cache hands out one object per client until it changes (a new secret is a new object), so
// an entry never outlives the secret it was made from. A SHA-256 of a high-entropy secret and
// timingSafeEqual cost a fraction of a fresh HMAC object per request (8% of a cache-hit introspection).
const verified = new WeakMap<Client, Buffer>();
const digestOf = (secret: string): Buffer => hash('sha256', secret, 'buffer') as unknown as Buffer;
function matchesVerified(client: Client, secret: string): boolean {
  const known = verified.get(client);
  return known !== undefined && timingSafeEqual(known, digestOf(secret));
}

// Wrong secrets are budgeted per client id and client address (src/clients/secret-failures.ts): an
// address past its budget is refused before the secret is looked at; other addresses are not affected.
async function checkSecret(ctx: ClientAuthContext, req: HttpRequest, id: string, secret: string, failures?: Promise<string | null | undefined>): Promise<Client> {
  const address = req.ip;
  const budget = [{ key: failureBudgetKey(id, address), ...CLIENT_SECRET_FAILURES }];
  await refuseWhenSpent(ctx.redis, budget, 'Too many failed authentications for this client from this address. Try again later.', failures);
  const client = await ctx.clients.get(id);
  // Compare even for unknown clients so timing does not reveal which client ids exist.
  let ok = client !== null && matchesVerified(client, secret);
  if (!ok) {
    ok = secretMatches(ctx.secretKey, secret, client?.secretHash ?? null);
    if (ok) verified.set(client!, digestOf(secret));
  }
  if (!client || !ok) { await recordSecretFailure(ctx, id, address, client); throw invalid(); }
  // A client registered for Basic may also post its secret, and vice versa (both are secret-based).
  if (client.authMethod !== 'client_secret_basic' && client.authMethod !== 'client_secret_post') throw invalid();
  if (client.status !== 'active') throw new Forbidden('client_disabled', 'The client is disabled.');
  return classify(req, client);
}

/**
 * private_key_jwt (RFC 7523 2.2 and 3), verified with jose: iss = sub = the client, aud the endpoint or
 * the issuer, exp required and at most ASSERTION_MAX_LIFETIME ahead, nbf and iat not in the future, iat
 * (when present) not older than ASSERTION_MAX_LIFETIME, only the algorithms the registered key allows,
 * unknown crit refused; then the jti is spent once (replay).
 */
async function checkAssertion(ctx: ClientAuthContext, req: HttpRequest, assertion: string, claimedId: string | undefined): Promise<Client> {
  let header: ReturnType<typeof decodeProtectedHeader>, unverified: ReturnType<typeof decodeJwt>;
  try { header = decodeProtectedHeader(assertion); unverified = decodeJwt(assertion); } catch { throw invalid('The client assertion is malformed.'); }
  const id = unverified.sub;
  if (typeof id !== 'string' || unverified.iss !== id || (claimedId !== undefined && claimedId !== id)) throw invalid('The client assertion must have iss = sub = client_id.');
  const client = await ctx.clients.get(id);
  if (!client || client.authMethod !== 'private_key_jwt' || !client.jwks) throw invalid();
  const now = Math.floor(Date.now() / 1000);
  const jwk = registeredKey(client.jwks, header.kid, now);
  if (!jwk) throw invalid('Unknown assertion key, or one not valid now.');
  const algorithms = algorithmsFor(jwk);
  if (!algorithms.includes(header.alg as SigningAlg)) throw invalid('Unsupported assertion algorithm.');
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(assertion, (h) => importFor(jwk, h.alg!), {
      algorithms, issuer: id, subject: id, audience: [ctx.endpoint, ctx.issuer], requiredClaims: ['exp', 'jti'],
      clockTolerance: ASSERTION_CLOCK_TOLERANCE, ...(unverified.iat !== undefined ? { maxTokenAge: ASSERTION_MAX_LIFETIME } : {}),
    }));
  } catch (err) {
    if (err instanceof errors.JWSSignatureVerificationFailed) throw invalid('Bad assertion signature.');
    if (err instanceof errors.JWTExpired) throw invalid('The assertion is expired.');
    if (err instanceof errors.JWTClaimValidationFailed) throw invalid(`The assertion's ${err.claim} claim is not acceptable.`);
    throw invalid('The client assertion is not acceptable.');
  }
  const exp = payload.exp!;
  if (exp > now + ASSERTION_MAX_LIFETIME + ASSERTION_CLOCK_TOLERANCE) throw invalid('The assertion lives too long.');
  if (typeof payload.jti !== 'string' || payload.jti.length === 0 || payload.jti.length > 256) throw invalid('The assertion needs a jti.');
  // RFC 7523 3: an assertion is used once; its jti is remembered until it has expired.
  let fresh: string | null;
  try {
    fresh = await ctx.redis.set(redisKeys.clientAssertion(id, payload.jti), '1', 'EX', Math.max(1, exp - now + ASSERTION_CLOCK_TOLERANCE), 'NX');
  } catch (err) {
    throw new ServiceUnavailable('Client assertion replay state cannot be read.', 1, err);
  }
  if (fresh !== 'OK') throw invalid('The assertion was already used.');
  if (client.status !== 'active') throw new Forbidden('client_disabled', 'The client is disabled.');
  return classify(req, client);
}
