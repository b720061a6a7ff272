import type { Sql } from '../sql.js';

// Redis holds the revocation state of the whole deployment under keys that need no tenant (a jti is
// unique across tenants) and is refilled from Postgres in one pass when it lost its data; these are the
// reads of that pass.

/** The next 5,000 unexpired revoked token ids of every tenant after `after` (by jti), for the refill of Redis. */
export function revokedAfter(sql: Sql, now: number, after: string): Promise<Array<{ jti: string; expires_at: number }>> {
  return sql<{ jti: string; expires_at: number }[]>`
    select jti, expires_at from revocations where expires_at > ${now} and jti > ${after} order by jti limit 5000`;
}

/** Every unexpired revocation mark (a subject's tokens before a time) of every tenant, each with its tenant, for the refill. */
export function liveMarks<K extends string>(sql: Sql, now: number): Promise<Array<{ tenant_id: string; subject_kind: K; subject_id: string; not_before: number; expires_at: number }>> {
  return sql<{ tenant_id: string; subject_kind: K; subject_id: string; not_before: number; expires_at: number }[]>`
    select tenant_id, subject_kind, subject_id, not_before, expires_at from revocation_marks where expires_at > ${now}`;
}
