import { importJWK, type JWK } from 'jose';
import type { SigningAlg } from '../tokens/keys.js';

/**
 * A client's registered public keys (its jwks): what private_key_jwt assertions (src/clients/authenticate.ts)
 * and request objects (src/login/authorize/request-object.ts) are verified with.
 */

export const ASSERTION_ALGS = new Set<SigningAlg>(['ES256', 'PS256', 'RS256']);

/** The algorithms a registered key may sign with: its own alg when it names one, else those its type allows. */
export function algorithmsFor(jwk: Record<string, unknown>): SigningAlg[] {
  if (jwk.alg !== undefined) return ASSERTION_ALGS.has(jwk.alg as SigningAlg) ? [jwk.alg as SigningAlg] : [];
  if (jwk.kty === 'RSA') return ['RS256', 'PS256'];
  if (jwk.kty === 'EC' && jwk.crv === 'P-256') return ['ES256'];
  return [];
}

// Imported keys per registered JWK object (the client cache hands out the same object until the client changes).
const imported = new WeakMap<object, Map<string, Promise<Awaited<ReturnType<typeof importJWK>>>>>();
export function importFor(jwk: Record<string, unknown>, alg: string): Promise<Awaited<ReturnType<typeof importJWK>>> {
  let byAlg = imported.get(jwk);
  if (!byAlg) { byAlg = new Map(); imported.set(jwk, byAlg); }
  let key = byAlg.get(alg);
  if (!key) {
    // Only the public members: a registered key never carries private ones, and importJWK must not see metadata.
    const { kty, n, e, crv, x, y } = jwk as Record<string, string>;
    key = importJWK({ kty, n, e, crv, x, y } as JWK, alg);
    key.catch(() => byAlg!.delete(alg));
    byAlg.set(alg, key);
  }
  return key;
}

/** The registered key a JWS names by kid (or the only one, without kid), if it is valid now. */
export function registeredKey(jwks: { keys: Array<Record<string, unknown>> } | null, kid: string | undefined, now = Math.floor(Date.now() / 1000)): Record<string, unknown> | undefined {
  if (!jwks) return undefined;
  const keys = jwks.keys;
  const jwk = kid === undefined ? (keys.length === 1 ? keys[0] : undefined) : keys.find((k) => k.kid === kid);
  if (!jwk) return undefined;
  // Registered keys may carry a validity window (machine principal credentials' notBefore/expiresAt, in seconds).
  if ((typeof jwk.nbf === 'number' && jwk.nbf > now) || (typeof jwk.exp === 'number' && jwk.exp <= now)) return undefined;
  return jwk;
}
