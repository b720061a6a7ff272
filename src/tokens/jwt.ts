import { constants, createPrivateKey, sign as cryptoSign, verify as cryptoVerify, type KeyObject } from 'node:crypto';
import { headerAlgFits, type SigningAlg } from './algorithms.js';
import type { KeyRing, VerifyKey } from './keys.js';

/** Why a token was refused; callers map these to their endpoint's answer. */
export type JwtFailure = 'malformed' | 'unknown_key' | 'algorithm' | 'signature' | 'type' | 'issuer' | 'expired' | 'not_yet_valid' | 'crit';

export class JwtError extends Error {
  constructor(readonly reason: JwtFailure) {
    // An expected outcome (expired, forged, revoked tokens are a third of an exchange mix): no stack,
    // which costs more than the check (2% of the HTTP thread under token exchange), as for AppError.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(`jwt ${reason}`);
    Error.stackTraceLimit = limit;
    this.name = 'JwtError';
  }
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

const utf8 = new TextDecoder('utf-8', { fatal: true });
const CANONICAL_B64U = /^[A-Za-z0-9_-]*$/;
const NOT_B64 = /[^A-Za-z0-9+/]/;

/**
 * base64url decoding with exactly the leniency of jose (and so of WHATWG atob, RFC 4648 5 plus
 * "forgiving-base64"): '+' and '/' are refused, ASCII whitespace is skipped, '=' padding only at the
 * end of a whole quantum, trailing bits ignored. Buffer's own decoder skips any character it does not
 * know, which would make ours accept tokens jose refuses (found by test/tokens/jwt-differential).
 * Throws on anything else.
 */
export function b64uDecode(s: string): Buffer {
  if (CANONICAL_B64U.test(s)) {
    if (s.length % 4 === 1) throw new Error('base64url length');
    return Buffer.from(s, 'base64url');
  }
  if (s.includes('+') || s.includes('/')) throw new Error('base64url alphabet');
  let t = s.replace(/[\t\n\f\r ]/g, '').replace(/-/g, '+').replace(/_/g, '/');
  if (t.length % 4 === 0) t = t.endsWith('==') ? t.slice(0, -2) : t.endsWith('=') ? t.slice(0, -1) : t;
  if (t.length % 4 === 1 || NOT_B64.test(t)) throw new Error('base64url');
  return Buffer.from(t, 'base64');
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Splits and parses a compact JWS without trusting anything in it: three segments, strict UTF-8 JSON objects. */
export function decodeJwt(token: string, payload?: JwtPayload): DecodedJwt {
  if (typeof token !== 'string' || token.length > 16384) throw new JwtError('malformed');
  const a = token.indexOf('.');
  const b = token.indexOf('.', a + 1);
  if (a < 0 || b < 0 || token.indexOf('.', b + 1) !== -1) throw new JwtError('malformed');
  try {
    const header = JSON.parse(utf8.decode(b64uDecode(token.slice(0, a)))) as JwtHeader;
    // A read-ahead already decoded this very string's claims (src/tokens/read-ahead.ts): not parsed twice.
    // The signature covers the segment itself, so claims parsed from it earlier are as good as ours.
    payload ??= JSON.parse(utf8.decode(b64uDecode(token.slice(a + 1, b)))) as JwtPayload;
    if (!isPlainObject(header) || !isPlainObject(payload)) throw new Error('shape');
    // Every segment decoded, so the signing input is ASCII (base64url, whitespace and dots only).
    return { header, payload, signingInput: token.slice(0, b), signature: b64uDecode(token.slice(b + 1)) };
  } catch {
    throw new JwtError('malformed');
  }
}

/** False for any signature that does not verify, including ones of the wrong length or shape (never throws). */
export function verifySignature(key: { alg: SigningAlg; publicKey: KeyObject }, input: string, signature: Buffer): boolean {
  const data = Buffer.from(input);
  try {
    switch (key.alg) {
      case 'RS256': return cryptoVerify('sha256', data, key.publicKey, signature);
      case 'PS256': return cryptoVerify('sha256', data, { key: key.publicKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }, signature);
      case 'ES256': return signature.length === 64 && cryptoVerify('sha256', data, { key: key.publicKey, dsaEncoding: 'ieee-p1363' }, signature);
      // RFC 8032 5.1: Ed25519 hashes internally (no digest named); its signature is always 64 bytes.
      case 'EdDSA': return signature.length === 64 && key.publicKey.asymmetricKeyType === 'ed25519' && cryptoVerify(null, data, key.publicKey, signature);
      default: return false;
    }
  } catch {
    return false;
  }
}

export function signWith(alg: SigningAlg, privateKey: KeyObject, input: string): Buffer {
  const data = Buffer.from(input);
  switch (alg) {
    case 'RS256': return cryptoSign('sha256', data, privateKey);
    case 'PS256': return cryptoSign('sha256', data, { key: privateKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 });
    case 'ES256': return cryptoSign('sha256', data, { key: privateKey, dsaEncoding: 'ieee-p1363' });
    case 'EdDSA': return cryptoSign(null, data, privateKey);
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
  /**
   * Seconds past exp still accepted, when it differs from clockTolerance: 0 for our own tokens, which
   * expire exactly at exp (the tolerance is for clocks elsewhere; iat and nbf keep it across our nodes).
   */
  expiryTolerance?: number;
  /** Seconds since iat after which the token is refused (jose's maxTokenAge); unbounded by default. */
  maxTokenAge?: number;
  now?: number;
}

/**
 * Verifies a token of our own issuance per RFC 8725: the kid must name one of our keys that verifies the
 * token's tenant, the header alg must be a name of that key's pinned alg, no crit extensions, the explicit type must match, exp is required.
 * Keys named by jku/x5u/jwk/x5c headers are never fetched or used.
 */
export function verifyJwt(ring: Pick<KeyRing, 'verifyKeyFor'>, token: string, opts: VerifyOptions): DecodedJwt {
  const d = decodeJwt(token);
  return checkDecoded(d, keyOf(ring, d), opts);
}

export function checkDecoded(d: DecodedJwt, key: VerifyKey | undefined, opts: VerifyOptions): DecodedJwt {
  const k = checkHeader(d, key);
  if (!verifySignature(k, d.signingInput, d.signature)) throw new JwtError('signature');
  return checkClaims(d, opts);
}

/**
 * Our key the header names, if it may verify a token of the tenant the (not yet verified) payload names:
 * a tenant's key verifies only that tenant's tokens (KeyRing.verifyKeyFor), so a token re-labelled for
 * another tenant names no key. A kid that is not a string names none (String(["kid"]) would).
 */
export function keyOf(ring: Pick<KeyRing, 'verifyKeyFor'>, d: DecodedJwt): VerifyKey | undefined {
  return typeof d.header.kid === 'string' ? ring.verifyKeyFor(d.header.kid, d.payload.tenant) : undefined;
}

/** The header checks that come before the signature: our kid, the key's pinned alg (never none, HS*, or another key type's), no crit. */
export function checkHeader(d: DecodedJwt, key: VerifyKey | undefined): VerifyKey {
  if (!key) throw new JwtError('unknown_key');
  if (!headerAlgFits(d.header.alg, key.alg)) throw new JwtError('algorithm');
  if (d.header.crit !== undefined) throw new JwtError('crit');
  return key;
}

/** RFC 7515 4.1.9: "application/" may be omitted from typ and media types compare case-insensitively. */
export function typMatches(typ: unknown, expected: string): boolean {
  if (typ === expected) return true;
  if (typeof typ !== 'string') return false;
  const norm = (v: string) => (v.includes('/') ? v.toLowerCase() : `application/${v.toLowerCase()}`);
  return norm(typ) === norm(expected);
}

/**
 * The checks after the signature, with jose's semantics (differential-tested against jwtVerify): explicit
 * type, issuer, exp and iat required (RFC 9068 2.2), every present NumericDate a number, nbf and iat
 * not in the future and exp not past beyond the tolerance, iat not older than maxTokenAge.
 */
export function checkClaims(d: DecodedJwt, opts: VerifyOptions): DecodedJwt {
  const { header, payload } = d;
  if (!typMatches(header.typ, opts.typ)) throw new JwtError('type');
  if (!Object.hasOwn(payload, 'exp') || !Object.hasOwn(payload, 'iat') || !Object.hasOwn(payload, 'iss')) throw new JwtError('malformed');
  if (payload.iss !== opts.issuer) throw new JwtError('issuer');
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  const skew = opts.clockTolerance ?? 5;
  const { exp, iat, nbf } = payload;
  if (typeof iat !== 'number' || typeof exp !== 'number' || (nbf !== undefined && typeof nbf !== 'number')) throw new JwtError('malformed');
  if (nbf !== undefined && nbf > now + skew) throw new JwtError('not_yet_valid');
  if (exp <= now - (opts.expiryTolerance ?? skew)) throw new JwtError('expired');
  const age = now - iat;
  if (age - skew > (opts.maxTokenAge ?? Number.MAX_VALUE)) throw new JwtError('expired');
  if (age < -skew) throw new JwtError('not_yet_valid');
  return d;
}
