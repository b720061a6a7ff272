import { createHash, createPublicKey } from 'node:crypto';
import { ValidationError } from '../errors.js';
import type { CredentialAlg } from './model.js';

// Members that only a private (or symmetric) key has: their presence means a secret was sent.
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
const bad = (msg: string): never => { throw new ValidationError({ publicJwk: [msg] }); };

/**
 * Checks a credential's public JWK against its algorithm and returns only its public members:
 * ES256 needs an EC P-256 key, RS256/PS256 an RSA key of at least 2048 bits. Private key material is
 * refused outright; the private key never reaches the server.
 */
export function publicJwkFor(input: unknown, alg: CredentialAlg): Record<string, string> {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) bad('must be a JSON Web Key object');
  const jwk = input as Record<string, unknown>;
  if (PRIVATE_MEMBERS.some((m) => m in jwk)) bad('contains private key material; register the public key only');
  let pub: Record<string, string>;
  if (alg === 'ES256') {
    if (jwk.kty !== 'EC' || jwk.crv !== 'P-256') bad('ES256 needs an EC key on curve P-256');
    pub = { kty: 'EC', crv: 'P-256', x: String(jwk.x), y: String(jwk.y) };
  } else {
    if (jwk.kty !== 'RSA') bad(`${alg} needs an RSA key`);
    pub = { kty: 'RSA', n: String(jwk.n), e: String(jwk.e) };
  }
  let key;
  try { key = createPublicKey({ key: pub as never, format: 'jwk' }); } catch { return bad('is not a valid public key'); }
  if (alg !== 'ES256' && (key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) bad('RSA keys must have at least 2048 bits');
  return pub;
}

/** RFC 7638 JWK thumbprint (SHA-256, base64url), the default kid. */
export function thumbprint(pub: Record<string, string>): string {
  const members = pub.kty === 'EC' ? { crv: pub.crv, kty: pub.kty, x: pub.x, y: pub.y } : { e: pub.e, kty: pub.kty, n: pub.n };
  return createHash('sha256').update(JSON.stringify(members)).digest('base64url');
}
