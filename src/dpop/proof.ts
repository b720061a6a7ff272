import { createHash } from 'node:crypto';
import { calculateJwkThumbprint, decodeProtectedHeader, errors, importJWK, jwtVerify, type JWK } from 'jose';
import { OAuthError } from '../errors.js';

/**
 * DPoP proofs (RFC 9449 4.3): what a proof must be, checked with jose. Replay (the jti) and the server
 * nonce are checked by the callers, which read Redis in the request's one round trip.
 */

/** RFC 9449 and RFC 9864 names: `Ed25519` is the fully specified name of what `EdDSA` means here. */
export const DPOP_ALGS = ['ES256', 'EdDSA', 'Ed25519', 'PS256', 'RS256'] as const;
/** How old a proof may be (its iat), and how far ahead of our clock (RFC 9449 11.1 leaves both open). */
export const PROOF_MAX_AGE = 60;
export const PROOF_MAX_SKEW = 5;
/** A jti longer than this is not a random identifier but a payload (RFC 9449 asks for 96 bits or more). */
const MAX_JTI = 256;

export interface VerifiedProof {
  /** The RFC 7638 thumbprint of the proof's key: what cnf.jkt binds a token to. */
  jkt: string;
  jti: string;
  iat: number;
  nonce: string | undefined;
}

/** The unverified jti and iat of a proof, to start its replay write before the signature is checked. */
export function peekProof(proof: string): { jti: string; iat: number } | undefined {
  const dot = proof.indexOf('.');
  const end = proof.indexOf('.', dot + 1);
  if (dot < 0 || end < 0) return undefined;
  try {
    const p = JSON.parse(Buffer.from(proof.slice(dot + 1, end), 'base64url').toString('utf8')) as { jti?: unknown; iat?: unknown };
    if (typeof p.jti !== 'string' || p.jti.length === 0 || p.jti.length > MAX_JTI || typeof p.iat !== 'number') return undefined;
    return { jti: p.jti, iat: p.iat };
  } catch { return undefined; }
}

/** The target URI as htu compares it: without query and fragment (RFC 9449 4.3 point 9). */
export function htuOf(uri: string): string {
  const u = new URL(uri);
  u.search = '';
  u.hash = '';
  return u.href;
}

/** base64url(SHA-256(access token)): the ath a proof for a resource request carries. */
export function athOf(accessToken: string): string {
  return createHash('sha256').update(accessToken, 'ascii').digest('base64url');
}

const invalid = (why: string) => new OAuthError('invalid_dpop_proof', why);

/** A proof key imported for one algorithm, and its thumbprint. */
interface ProofKey { key: Promise<Awaited<ReturnType<typeof importJWK>>>; jkt: Promise<string> }
/** How many proof keys a process keeps imported; past that the oldest is dropped. */
const MAX_KEYS = 10_000;
// A client signs its proofs with one key: importing it into WebCrypto and hashing its thumbprint once,
// instead of for every proof, was most of a proof's cost (perf/RESULTS.md run 72). Keyed by the JWK as
// sent, so a replayed or repeated key finds the same entry; bounded so random keys cannot grow it.
const proofKeys = new Map<string, ProofKey>();

function proofKey(jwk: JWK, alg: string): ProofKey {
  const id = `${alg} ${JSON.stringify(jwk)}`;
  let k = proofKeys.get(id);
  if (!k) {
    k = { key: importJWK(jwk, alg), jkt: calculateJwkThumbprint(jwk, 'sha256') };
    k.key.catch(() => proofKeys.delete(id));
    k.jkt.catch(() => proofKeys.delete(id));
    if (proofKeys.size >= MAX_KEYS) proofKeys.delete(proofKeys.keys().next().value!);
    proofKeys.set(id, k);
  }
  return k;
}

export interface ProofExpectations {
  htm: string;
  /** The endpoint's URI as the client addressed it (issuer-based). */
  htu: string;
  /** For resource requests: the access token the proof must name (ath). */
  accessToken?: string;
  now?: number;
}

/**
 * Verifies one proof against the request it came with; throws OAuthError invalid_dpop_proof naming
 * the fault. The proof's key is its own header's `jwk`, which must be a public key.
 */
export async function verifyProof(proof: string, want: ProofExpectations): Promise<VerifiedProof> {
  let header: ReturnType<typeof decodeProtectedHeader>;
  try { header = decodeProtectedHeader(proof); } catch { throw invalid('The DPoP proof is not a JWT.'); }
  if (header.typ !== 'dpop+jwt') throw invalid('The DPoP proof must have typ dpop+jwt.');
  if (typeof header.alg !== 'string' || !(DPOP_ALGS as readonly string[]).includes(header.alg)) throw invalid(`The DPoP proof must be signed with one of ${DPOP_ALGS.join(', ')}.`);
  const jwk = header.jwk as (JWK & Record<string, unknown>) | undefined;
  if (!jwk || typeof jwk !== 'object') throw invalid('The DPoP proof must carry its public key in jwk.');
  // A private member in the header would publish the key; refused by name before jose sees it.
  for (const m of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k', 'oth']) if (m in jwk) throw invalid('The DPoP proof\'s jwk must be a public key.');
  // What jose's EmbeddedJWK checks, with the imported key kept (proofKey): use and alg agree with the proof.
  if (jwk.use !== undefined && jwk.use !== 'sig') throw invalid('The DPoP proof\'s jwk must be a signing key.');
  if (jwk.alg !== undefined && jwk.alg !== header.alg) throw invalid('The DPoP proof\'s jwk is for another algorithm.');
  const pk = proofKey(jwk, header.alg);
  let payload: Record<string, unknown>;
  try {
    const key = await pk.key;
    if ((key as { type?: string }).type !== 'public') throw invalid('The DPoP proof\'s jwk must be a public key.');
    ({ payload } = await jwtVerify(proof, key, { typ: 'dpop+jwt', algorithms: [...DPOP_ALGS] }));
  } catch (err) {
    if (err instanceof OAuthError) throw err;
    if (err instanceof errors.JOSEError) throw invalid(err.code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' ? 'The DPoP proof\'s signature does not verify.' : 'The DPoP proof is invalid.');
    // importJWK refuses a malformed key (no kty, a curve the algorithm does not take) with a TypeError.
    if (err instanceof TypeError) throw invalid('The DPoP proof\'s jwk is not a valid key for its algorithm.');
    throw err;
  }
  const { jti, htm, htu, iat, ath, nonce } = payload;
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > MAX_JTI) throw invalid('The DPoP proof must have a jti.');
  if (htm !== want.htm) throw invalid('The DPoP proof\'s htm does not match the request method.');
  let htuOk = false;
  try { htuOk = typeof htu === 'string' && htuOf(htu) === htuOf(want.htu); } catch { htuOk = false; }
  if (!htuOk) throw invalid('The DPoP proof\'s htu does not match the request URI.');
  const now = want.now ?? Math.floor(Date.now() / 1000);
  if (typeof iat !== 'number' || !Number.isFinite(iat)) throw invalid('The DPoP proof must have an iat.');
  if (iat < now - PROOF_MAX_AGE || iat > now + PROOF_MAX_SKEW) throw invalid('The DPoP proof\'s iat is outside the accepted window.');
  if (want.accessToken !== undefined) {
    if (typeof ath !== 'string' || ath !== athOf(want.accessToken)) throw invalid('The DPoP proof\'s ath does not match the access token.');
  }
  if (nonce !== undefined && typeof nonce !== 'string') throw invalid('The DPoP proof\'s nonce must be a string.');
  let jkt: string;
  try { jkt = await pk.jkt; } catch { throw invalid('The DPoP proof\'s jwk is not a valid key.'); }
  return { jkt, jti, iat, nonce };
}
