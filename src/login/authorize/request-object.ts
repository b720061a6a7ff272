import { decodeProtectedHeader, errors, jwtVerify } from 'jose';
import type { Client } from '../../clients/model.js';
import { algorithmsFor, importFor, registeredKey } from '../../clients/registered-keys.js';
import { OAuthError } from '../../errors.js';
import type { Query } from './types.js';

/** Seconds a request object may live (exp - iat), as FAPI 2.0 Message Signing asks (at most 60 minutes). */
const MAX_LIFETIME = 3600;

const invalid = (why: string) => new OAuthError('invalid_request_object', why);

/**
 * A request object (RFC 9101 JAR): a JWT signed with one of the client's registered keys (never `none`),
 * iss = the client, aud = the issuer, exp required; its claims are the authorization request's parameters
 * and replace the ones sent beside it (RFC 9101 6.3). Throws invalid_request_object.
 */
export async function verifyRequestObject(client: Client, jwt: string, issuer: string): Promise<Query> {
  let header: ReturnType<typeof decodeProtectedHeader>;
  try { header = decodeProtectedHeader(jwt); } catch { throw invalid('The request object is not a JWT.'); }
  if (header.alg === 'none' || header.alg === undefined) throw invalid('The request object must be signed.');
  const jwk = registeredKey(client.jwks, header.kid);
  if (!jwk) throw invalid('The request object is not signed with a key the client registered.');
  const algorithms = algorithmsFor(jwk);
  if (!algorithms.includes(header.alg as never)) throw invalid('The request object\'s algorithm is not one its key allows.');
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(jwt, (h) => importFor(jwk, h.alg!), { algorithms, issuer: client.clientId, audience: issuer, requiredClaims: ['exp'], clockTolerance: 5 }));
  } catch (err) {
    if (err instanceof errors.JOSEError) throw invalid(err instanceof errors.JWSSignatureVerificationFailed ? 'The request object\'s signature does not verify.' : `The request object is not acceptable (${err.code}).`);
    throw err;
  }
  const now = Math.floor(Date.now() / 1000);
  if (Number(payload.exp) - (typeof payload.iat === 'number' ? payload.iat : now) > MAX_LIFETIME) throw invalid('The request object lives too long.');
  if (payload.client_id !== undefined && payload.client_id !== client.clientId) throw invalid('The request object names another client.');
  const out: Query = {};
  for (const [k, v] of Object.entries(payload)) {
    if (['iss', 'aud', 'exp', 'iat', 'nbf', 'jti', 'request', 'request_uri'].includes(k)) continue;
    if (typeof v === 'string') out[k] = v;
    else if (typeof v === 'number') out[k] = String(v);
  }
  out.client_id = client.clientId;
  return out;
}
