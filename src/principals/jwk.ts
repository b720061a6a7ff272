import { calculateJwkThumbprint, importJWK, type JWK } from 'jose';
import { ValidationError } from '../errors.js';
import type { CredentialAlg } from './model.js';

// Members that only a private (or symmetric) key has: their presence means a secret was sent.
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k', 'priv'];
const bad = (msg: string): never => { throw new ValidationError({ publicJwk: [msg] }); };
const str = (v: unknown, name: string): string => (typeof v === 'string' && v.length > 0 ? v : bad(`member ${name} must be a non-empty string`));

/**
 * Checks a credential's public JWK against its algorithm and returns only its public members:
 * ES256 needs an EC P-256 key, RS256/PS256 an RSA key of at least 2048 bits. Private key material is
 * refused outright (the private key never reaches the server), as is a JWK whose own alg, use or
 * key_ops contradict the credential. The key must then import with jose for that algorithm.
 */
export async function publicJwkFor(input: unknown, alg: CredentialAlg): Promise<Record<string, string>> {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) bad('must be a JSON Web Key object');
  const jwk = input as Record<string, unknown>;
  if (PRIVATE_MEMBERS.some((m) => m in jwk)) bad('contains private key material; register the public key only');
  if (jwk.alg !== undefined && jwk.alg !== alg) bad(`says alg ${String(jwk.alg)} but the credential is ${alg}`);
  if (jwk.use !== undefined && jwk.use !== 'sig') bad('use must be sig');
  if (jwk.key_ops !== undefined && (!Array.isArray(jwk.key_ops) || !jwk.key_ops.includes('verify'))) bad('key_ops must include verify');
  let pub: Record<string, string>;
  if (alg === 'ES256') {
    if (jwk.kty !== 'EC' || jwk.crv !== 'P-256') bad('ES256 needs an EC key on curve P-256');
    pub = { kty: 'EC', crv: 'P-256', x: str(jwk.x, 'x'), y: str(jwk.y, 'y') };
  } else {
    if (jwk.kty !== 'RSA') bad(`${alg} needs an RSA key`);
    pub = { kty: 'RSA', n: str(jwk.n, 'n'), e: str(jwk.e, 'e') };
  }
  let key: Awaited<ReturnType<typeof importJWK>>;
  try { key = await importJWK(pub as JWK, alg); } catch { return bad('is not a valid public key'); }
  const bits = (key as { algorithm?: { modulusLength?: number } }).algorithm?.modulusLength ?? 0;
  if (alg !== 'ES256' && bits < 2048) bad('RSA keys must have at least 2048 bits');
  return pub;
}

/** RFC 7638 JWK thumbprint (SHA-256, base64url), the default kid. */
export function thumbprint(pub: Record<string, string>): Promise<string> {
  return calculateJwkThumbprint(pub as JWK, 'sha256');
}
