import { Forbidden, OAuthError, ServiceUnavailable } from '../errors.js';
import type { HttpRequest } from '../http/request.js';
import type { Redis } from 'ioredis';
import { createPublicKey } from 'node:crypto';
import { decodeJwt, verifySignature } from '../tokens/jwt.js';
import type { SigningAlg } from '../tokens/keys.js';
import { secretMatches } from '../tokens/secrets.js';
import type { ClientCache } from './cache.js';
import type { Client } from './model.js';

export const JWT_BEARER_ASSERTION = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const ASSERTION_ALGS = new Set<SigningAlg>(['ES256', 'PS256', 'RS256']);

export interface ClientAuthContext {
  clients: ClientCache;
  redis: Redis;
  secretKey: Buffer;
  issuer: string;
  /** Where the assertion was sent (its aud may name the endpoint or the issuer). */
  endpoint: string;
}

const invalid = (why = 'Client authentication failed.') => new OAuthError('invalid_client', why);

/**
 * Authenticates the calling client by exactly one method: HTTP Basic (RFC 6749 2.3.1), client_secret_post,
 * or private_key_jwt (RFC 7523 section 3). Every failure is the same invalid_client answer.
 */
export async function authenticateClient(ctx: ClientAuthContext, req: HttpRequest, form: Record<string, string | string[]>): Promise<Client> {
  const auth = req.headers.authorization;
  const assertion = form.client_assertion;
  const postSecret = form.client_secret;
  const methods = (auth?.startsWith('Basic ') ? 1 : 0) + (assertion !== undefined ? 1 : 0) + (postSecret !== undefined ? 1 : 0);
  if (methods === 0) {
    // Public clients (token_endpoint_auth_method none) identify themselves with client_id only; PKCE protects their codes.
    const pub = typeof form.client_id === 'string' ? await ctx.clients.get(form.client_id) : null;
    if (pub?.authMethod === 'none' && pub.status === 'active') return pub;
    throw invalid('Client authentication is required.');
  }
  if (methods > 1) throw new OAuthError('invalid_request', 'Use exactly one client authentication method.');

  if (auth?.startsWith('Basic ')) {
    const decoded = Buffer.from(auth.slice(6), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 1) throw invalid();
    let id: string, secret: string;
    try {
      id = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' '));
      secret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' '));
    } catch { throw invalid(); }
    return checkSecret(ctx, id, secret);
  }
  if (postSecret !== undefined) {
    if (typeof form.client_id !== 'string' || typeof postSecret !== 'string') throw invalid();
    return checkSecret(ctx, form.client_id, postSecret);
  }
  if (form.client_assertion_type !== JWT_BEARER_ASSERTION || typeof assertion !== 'string') throw invalid('Unsupported client assertion type.');
  return checkAssertion(ctx, assertion, typeof form.client_id === 'string' ? form.client_id : undefined);
}

async function checkSecret(ctx: ClientAuthContext, id: string, secret: string): Promise<Client> {
  const client = await ctx.clients.get(id);
  // Compare even for unknown clients so timing does not reveal which client ids exist.
  const ok = secretMatches(ctx.secretKey, secret, client?.secretHash ?? null);
  if (!client || !ok) throw invalid();
  // A client registered for Basic may also post its secret, and vice versa (both are secret-based).
  if (client.authMethod !== 'client_secret_basic' && client.authMethod !== 'client_secret_post') throw invalid();
  if (client.status !== 'active') throw new Forbidden('client_disabled', 'The client is disabled.');
  return client;
}

async function checkAssertion(ctx: ClientAuthContext, assertion: string, claimedId: string | undefined): Promise<Client> {
  let d;
  try { d = decodeJwt(assertion); } catch { throw invalid('The client assertion is malformed.'); }
  const { header, payload } = d;
  const id = payload.sub;
  if (typeof id !== 'string' || payload.iss !== id || (claimedId !== undefined && claimedId !== id)) throw invalid('The client assertion must have iss = sub = client_id.');
  const client = await ctx.clients.get(id);
  if (!client || client.authMethod !== 'private_key_jwt' || !client.jwks) throw invalid();
  if (header.crit !== undefined || !ASSERTION_ALGS.has(header.alg as SigningAlg)) throw invalid('Unsupported assertion algorithm.');
  const jwk = client.jwks.keys.find((k) => (header.kid === undefined ? client.jwks!.keys.length === 1 : k.kid === header.kid));
  if (!jwk || (jwk.alg !== undefined && jwk.alg !== header.alg)) throw invalid('Unknown assertion key.');
  // Registered keys may carry a validity window (machine principal credentials' notBefore/expiresAt, in seconds).
  const nowKey = Math.floor(Date.now() / 1000);
  if ((typeof jwk.nbf === 'number' && jwk.nbf > nowKey) || (typeof jwk.exp === 'number' && jwk.exp <= nowKey)) throw invalid('The assertion key is not valid now.');
  let publicKey;
  try { publicKey = createPublicKey({ key: jwk as never, format: 'jwk' }); } catch { throw invalid('Unknown assertion key.'); }
  if (!verifySignature({ alg: header.alg as SigningAlg, publicKey }, d.signingInput, d.signature)) throw invalid('Bad assertion signature.');
  const now = Math.floor(Date.now() / 1000);
  if (typeof payload.exp !== 'number' || payload.exp + 5 <= now || payload.exp > now + 600) throw invalid('The assertion is expired or lives too long.');
  const aud = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  if (!aud.includes(ctx.endpoint) && !aud.includes(ctx.issuer)) throw invalid('The assertion audience must be the token endpoint or the issuer.');
  if (typeof payload.jti !== 'string' || payload.jti.length > 256) throw invalid('The assertion needs a jti.');
  // RFC 7523 3: an assertion is used once.
  let fresh: string | null;
  try {
    fresh = await ctx.redis.set(`ca:{${id}}:${payload.jti}`, '1', 'EX', Math.max(1, payload.exp - now + 5), 'NX');
  } catch (err) {
    throw new ServiceUnavailable('Client assertion replay state cannot be read.', 1, err);
  }
  if (fresh !== 'OK') throw invalid('The assertion was already used.');
  if (client.status !== 'active') throw new Forbidden('client_disabled', 'The client is disabled.');
  return client;
}
