import { createHash } from 'node:crypto';
import type { Deps } from '../deps.js';
import { TOKEN_TYPES } from '../tokens/jwt.js';
import { LOGIN } from '../login/options.js';

/** OpenID Connect Core 3.1.3.6: the left half of SHA-256 of the access token, base64url. */
export function atHash(accessToken: string): string {
  const d = createHash('sha256').update(accessToken, 'ascii').digest();
  return d.subarray(0, d.length / 2).toString('base64url');
}

export interface IdTokenInput {
  clientId: string; sub: string; email: string; emailVerified: boolean; authTime: number; nonce?: string; accessToken: string; tenant: string;
  /** The client's `id_token_signed_response_alg`; the tenant's default algorithm when absent or no longer enabled. */
  alg?: string | null;
}

/** Signs an ID token (OpenID Connect Core 2) with the tenant's keys, typ JWT, in the algorithm the client registered. */
export async function issueIdToken(deps: Deps, t: IdTokenInput): Promise<string> {
  const iat = Math.floor(Date.now() / 1000);
  const claims: Record<string, unknown> = {
    iss: deps.config.issuer, sub: t.sub, aud: t.clientId, exp: iat + LOGIN.idTokenTtlSeconds, iat, auth_time: t.authTime,
    ...(t.nonce !== undefined ? { nonce: t.nonce } : {}),
    at_hash: atHash(t.accessToken), email: t.email, email_verified: t.emailVerified, azp: t.clientId, tenant: t.tenant,
  };
  return deps.tokens.signer.sign(t.tenant, { typ: TOKEN_TYPES.id }, claims, t.alg, deps.trace);
}
