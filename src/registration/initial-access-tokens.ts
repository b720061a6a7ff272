import type { Sql } from '../sql.js';
import { newId, randomToken } from '../store/ids.js';
import { findInitialAccessToken } from '../cross-tenant/credentials.js';
import type { InitialAccessTokenRow } from '../store/registrations.js';
import { hashSecret, secretMatches } from '../tokens/secrets.js';

/**
 * Initial access tokens (RFC 7591 3): `<id>.<secret>`. The id finds the row (and with it the tenant);
 * the secret is compared with its keyed hash in constant time. The value is shown once and never logged.
 */
export function newInitialAccessToken(key: Buffer): { id: string; value: string; hash: Buffer } {
  const id = newId('iat');
  const secret = randomToken(32);
  return { id, value: `${id}.${secret}`, hash: hashSecret(key, secret) };
}

export type TokenState = 'active' | 'expired' | 'used_up' | 'revoked';

/** Where a token stands now (revocation first, then expiry, then uses). */
export function tokenState(t: InitialAccessTokenRow, now = Date.now()): TokenState {
  if (t.revoked_at !== null) return 'revoked';
  if (t.expires_at !== null && Number(t.expires_at) <= now) return 'expired';
  if (t.max_uses !== null && t.uses >= t.max_uses) return 'used_up';
  return 'active';
}

/** The token a registration presents, when it is well formed, known and its secret matches (whatever its state). */
export async function presentedToken(sql: Sql, key: Buffer, value: string): Promise<InitialAccessTokenRow | null> {
  const dot = value.indexOf('.');
  const id = dot > 0 ? value.slice(0, dot) : '';
  const row = /^iat_[0-9a-f]{24}$/.test(id) ? await findInitialAccessToken(sql, id) : null;
  // Hashed and compared even for an unknown id, so timing does not tell unknown ids from wrong secrets.
  const ok = secretMatches(key, dot > 0 ? value.slice(dot + 1) : value, row?.token_hash ?? null);
  return ok ? row : null;
}

/** The admin view: never the value or its hash. */
export function tokenView(t: InitialAccessTokenRow): Record<string, unknown> {
  return {
    id: t.id, description: t.description, expires_at: t.expires_at === null ? null : Number(t.expires_at), max_uses: t.max_uses, uses: t.uses,
    revoked_at: t.revoked_at === null ? null : Number(t.revoked_at), status: tokenState(t), created_at: Number(t.created_at),
  };
}
