import { errors, jwtVerify, type JWTHeaderParameters } from 'jose';
import { advertised, headerAlgFits, SIGNING_ALGS } from './algorithms.js';
import { JwtError, type JwtFailure, type JwtPayload, type VerifyOptions } from './jwt.js';
import type { KeyRing } from './keys.js';

const ALGORITHMS = advertised(SIGNING_ALGS);
const UTF8 = new TextDecoder();

/** The tenant the (not yet verified) payload names, to pick a key that may verify it; undefined if it names none. */
function tenantOf(payload: unknown): unknown {
  // Decoded as jose decodes it (TextDecoder drops a BOM), so the tenant read is the one jose then verifies.
  try { return (JSON.parse(UTF8.decode(Buffer.from(String(payload), 'base64url'))) as { tenant?: unknown }).tenant; } catch { return undefined; }
}

/**
 * Verifies a token of our own issuance with jose, for the paths that are not per-request hot paths
 * (e.g. logout's id_token_hint): the same policy as verifyJwt — only a key of our set named by a string
 * kid and verifying the token's tenant, that key's pinned alg, no crit at all, the explicit type, issuer, exp and iat required — and the
 * same JwtError reasons. Keys named by jku/x5u/jwk/x5c headers are never used.
 */
export async function verifyOwnJwt(ring: Pick<KeyRing, 'verifyKeyFor'>, token: string, opts: Omit<VerifyOptions, 'now'>): Promise<JwtPayload> {
  if (typeof token !== 'string' || token.length > 16384) throw new JwtError('malformed');
  try {
    const { payload } = await jwtVerify(token, (h: JWTHeaderParameters, t) => {
      if (h.crit !== undefined) throw new JwtError('crit');
      const key = typeof h.kid === 'string' ? ring.verifyKeyFor(h.kid, tenantOf(t.payload)) : undefined;
      if (!key) throw new JwtError('unknown_key');
      if (!headerAlgFits(h.alg, key.alg)) throw new JwtError('algorithm');
      return key.publicKey;
    }, {
      algorithms: ALGORITHMS, typ: opts.typ, issuer: opts.issuer, requiredClaims: ['exp', 'iat'],
      clockTolerance: opts.clockTolerance ?? 5, maxTokenAge: opts.maxTokenAge ?? Number.MAX_VALUE,
    });
    return payload as JwtPayload;
  } catch (err) {
    throw err instanceof JwtError ? err : new JwtError(reasonOf(err));
  }
}

function reasonOf(err: unknown): JwtFailure {
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'signature';
  if (err instanceof errors.JOSEAlgNotAllowed) return 'algorithm';
  if (err instanceof errors.JWTExpired) return 'expired';
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'typ') return 'type';
    if (err.claim === 'iss' && err.reason === 'check_failed') return 'issuer';
    if (err.claim === 'nbf' || err.claim === 'iat') return err.reason === 'check_failed' ? 'not_yet_valid' : 'malformed';
  }
  if (err instanceof errors.JOSENotSupported) return 'crit';
  return 'malformed';
}
