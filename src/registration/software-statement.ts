import { createLocalJWKSet, decodeJwt, importJWK, jwtVerify, type JWK } from 'jose';
import { OAuthError } from '../errors.js';
import type { RegistrationRepository } from '../store/registrations.js';

const ALGS = ['ES256', 'PS256', 'RS256'];
/** JWT claims about the statement itself, not client metadata. */
const ENVELOPE = new Set(['iss', 'sub', 'aud', 'exp', 'nbf', 'iat', 'jti']);

/**
 * Verifies a software statement (RFC 7591 2.3) against the tenant's trusted issuers: a JWS by a key of
 * the issuer its `iss` names (ES256, PS256 or RS256), within its exp/nbf. Answers the issuer and the
 * metadata claims, which then win over the same fields of the request (RFC 7591 3.1.1).
 */
export async function verifySoftwareStatement(repo: RegistrationRepository, jwt: string): Promise<{ issuer: string; claims: Record<string, unknown> }> {
  let iss: unknown;
  try { iss = decodeJwt(jwt).iss; } catch { throw new OAuthError('invalid_software_statement', 'The software statement is not a JWT.'); }
  if (typeof iss !== 'string' || !iss) throw new OAuthError('invalid_software_statement', 'The software statement names no issuer (iss).');
  const trusted = await repo.issuer(iss);
  if (!trusted) throw new OAuthError('unapproved_software_statement', 'The software statement\'s issuer is not trusted by this tenant.');
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(jwt, createLocalJWKSet(trusted.jwks as { keys: JWK[] }), { issuer: iss, algorithms: ALGS, clockTolerance: 5 }));
  } catch {
    // Never the library's text: it could say which check failed in more detail than a forger needs.
    throw new OAuthError('invalid_software_statement', 'The software statement\'s signature or validity period is not acceptable.');
  }
  return { issuer: iss, claims: Object.fromEntries(Object.entries(payload).filter(([k]) => !ENVELOPE.has(k))) };
}

/** Problems of an issuer's key set as an administrator gives it: each key must be a public signing key we can import. */
export async function issuerKeyProblems(jwks: { keys: Array<Record<string, unknown>> }): Promise<string[]> {
  const out: string[] = [];
  for (const [i, k] of jwks.keys.entries()) {
    if ('d' in k || 'k' in k) { out.push(`keys.${i} must be a public key`); continue; }
    const alg = typeof k.alg === 'string' ? k.alg : k.kty === 'EC' ? 'ES256' : 'RS256';
    if (!ALGS.includes(alg)) { out.push(`keys.${i} alg must be one of ${ALGS.join(', ')}`); continue; }
    try { await importJWK(k as JWK, alg); } catch { out.push(`keys.${i} is not a usable ${alg} public key`); }
  }
  return out;
}
