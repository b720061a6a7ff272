import { ValidationError } from '../errors.js';
import { textProblem } from '../http/input-bounds.js';

/** Keyset position in a list ordered by (created_at desc, id desc). */
export interface Cursor { createdAt: number; id: string }

/** The one cursor codec of every admin list: opaque base64url of `[created_at, id]`. */
export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify([c.createdAt, c.id])).toString('base64url');
}

/**
 * Decodes an opaque cursor; a malformed one is 422 validation_error on `cursor`. Its id is compared in
 * SQL, so it passes the request input check too (a NUL in it reached Postgres).
 */
export function decodeCursor(s: string | undefined): Cursor | undefined {
  if (s === undefined || s === '') return undefined;
  try {
    const v = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 2 && Number.isSafeInteger(v[0]) && typeof v[1] === 'string' && textProblem(v[1]) === null) return { createdAt: v[0] as number, id: v[1] as string };
  } catch { /* fall through */ }
  throw new ValidationError({ cursor: ['is not a valid cursor'] });
}

/** Given limit+1 rows, the page and the cursor of the next one (null when there is none). */
export function page<T extends { created_at: number | string; id: string }>(rows: T[], limit: number): { items: T[]; next: string | null } {
  if (rows.length <= limit) return { items: rows, next: null };
  const items = rows.slice(0, limit);
  const last = items[items.length - 1]!;
  return { items, next: encodeCursor({ createdAt: Number(last.created_at), id: last.id }) };
}
