import { constants, createPrivateKey, sign as cryptoSign, verify as cryptoVerify, type KeyObject } from 'node:crypto';
import type { KeyRing, SigningAlg, VerifyKey } from './keys.js';

/** Why a token was refused; callers map these to their endpoint's answer. */
export type JwtFailure = 'malformed' | 'unknown_key' | 'algorithm' | 'signature' | 'type' | 'issuer' | 'expired' | 'not_yet_valid' | 'crit';

export class JwtError extends Error {
  constructor(readonly reason: JwtFailure) { super(`jwt ${reason}`); this.name = 'JwtError'; }
}

export interface JwtHeader { alg: string; typ?: string; kid?: string; crit?: unknown; [k: string]: unknown }
export type JwtPayload = Record<string, any> & { exp?: number; iat?: number; nbf?: number; iss?: string; sub?: string; jti?: string };

export interface DecodedJwt {
  header: JwtHeader;
  payload: JwtPayload;
  signingInput: string;
  signature: Buffer;
}

/** Explicit JWT types (RFC 8725 3.11) so each kind of token is accepted only where it is expected. */
export const TOKEN_TYPES = {
  access: 'at+jwt',
  id: 'JWT',
  elevation: 'svc-elevation+jwt',
} as const;

const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

export function signingInput(header: JwtHeader, payload: JwtPayload): string {
  return `${b64(header)}.${b64(payload)}`;
}

/** Splits and parses a compact JWS without trusting anything in it. */
export function decodeJwt(token: string): DecodedJwt {
  if (typeof token !== 'string' || token.length > 16384) throw new JwtError('malformed');
  const a = token.indexOf('.');
  const b = token.indexOf('.', a + 1);
  if (a <= 0 || b <= a + 1 || b === token.length - 1 || token.indexOf('.', b + 1) !== -1) throw new JwtError('malformed');
  try {
    const header = JSON.parse(Buffer.from(token.slice(0, a), 'base64url').toString('utf8')) as JwtHeader;
    const payload = JSON.parse(Buffer.from(token.slice(a + 1, b), 'base64url').toString('utf8')) as JwtPayload;
    if (!header || typeof header !== 'object' || !payload || typeof payload !== 'object' || Array.isArray(payload)) throw new Error('shape');
    return { header, payload, signingInput: token.slice(0, b), signature: Buffer.from(token.slice(b + 1), 'base64url') };
  } catch {
    throw new JwtError('malformed');
  }
}

export function verifySignature(key: { alg: SigningAlg; publicKey: KeyObject }, input: string, signature: Buffer): boolean {
  const data = Buffer.from(input);
  switch (key.alg) {
    case 'RS256': return cryptoVerify('sha256', data, key.publicKey, signature);
    case 'PS256': return cryptoVerify('sha256', data, { key: key.publicKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }, signature);
    case 'ES256': return cryptoVerify('sha256', data, { key: key.publicKey, dsaEncoding: 'ieee-p1363' }, signature);
  }
}

export function signWith(alg: SigningAlg, privateKey: KeyObject, input: string): Buffer {
  const data = Buffer.from(input);
  switch (alg) {
    case 'RS256': return cryptoSign('sha256', data, privateKey);
    case 'PS256': return cryptoSign('sha256', data, { key: privateKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 });
    case 'ES256': return cryptoSign('sha256', data, { key: privateKey, dsaEncoding: 'ieee-p1363' });
  }
}

export function importPkcs8(der: Buffer): KeyObject {
  return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
}

export interface VerifyOptions {
  typ: string;
  issuer: string;
  /** Seconds of clock skew tolerated on exp/nbf/iat. */
  clockTolerance?: number;
  now?: number;
}

/**
 * Verifies a token of our own issuance per RFC 8725: the kid must name one of our keys, the header alg
 * must equal that key's pinned alg, no crit extensions, the explicit type must match, exp is required.
 * Keys named by jku/x5u/jwk/x5c headers are never fetched or used.
 */
export function verifyJwt(ring: KeyRing, token: string, opts: VerifyOptions): DecodedJwt {
  const d = decodeJwt(token);
  return checkDecoded(d, ring.verifyKey(String(d.header.kid ?? '')), opts);
}

export function checkDecoded(d: DecodedJwt, key: VerifyKey | undefined, opts: VerifyOptions): DecodedJwt {
  const k = checkHeader(d, key);
  if (!verifySignature(k, d.signingInput, d.signature)) throw new JwtError('signature');
  return checkClaims(d, opts);
}

/** The header checks that come before the signature: our kid, the key's pinned alg, no crit. */
export function checkHeader(d: DecodedJwt, key: VerifyKey | undefined): VerifyKey {
  if (!key) throw new JwtError('unknown_key');
  if (d.header.alg !== key.alg) throw new JwtError('algorithm');
  if (d.header.crit !== undefined) throw new JwtError('crit');
  return key;
}

/** The checks after the signature: explicit type, issuer, exp (required), nbf and iat. */
export function checkClaims(d: DecodedJwt, opts: VerifyOptions): DecodedJwt {
  const { header, payload } = d;
  if (header.typ !== opts.typ) throw new JwtError('type');
  if (payload.iss !== opts.issuer) throw new JwtError('issuer');
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  const skew = opts.clockTolerance ?? 5;
  if (typeof payload.exp !== 'number') throw new JwtError('malformed');
  if (payload.exp + skew <= now) throw new JwtError('expired');
  if (typeof payload.nbf === 'number' && payload.nbf - skew > now) throw new JwtError('not_yet_valid');
  if (typeof payload.iat === 'number' && payload.iat - skew > now) throw new JwtError('not_yet_valid');
  return d;
}
