import type { Details } from '../errors.js';
import type { PendingChange } from '../store/review-tasks.js';
import type { User } from '../store/users.js';
import type { Mapping, Value } from './model.js';

/** Catalog paths a user import can write: the user's own fields, or a key under its metadata. */
const FIELD = /^(email|name|email_verified|metadata\.[A-Za-z0-9_-]{1,64})$/;

/** The catalog entries of an import mapping must name user fields, and one must be the email (422 naming the path). */
export function checkUserCatalog(m: Mapping, prefix = 'mapping.'): Details {
  const out: Details = {};
  m.catalog.entries.forEach((e, i) => { if (!FIELD.test(e.path)) out[`${prefix}catalog.entries.${i}.path`] = ['must be email, name, email_verified or metadata.<key>']; });
  if (!m.catalog.entries.some((e) => e.path === 'email')) out[`${prefix}catalog.entries`] = ['must have an entry with path email'];
  return out;
}

const scalar = (v: Value): string | number | boolean | null => (Array.isArray(v) ? v.map(String).join(',') : v);

/** A mapped row as the user fields it sets. */
export function toUserChange(m: Mapping, targets: Map<string, Value>): PendingChange | null {
  const byId = new Map(m.catalog.entries.map((e) => [e.id, e]));
  const change: PendingChange = { email: '' };
  for (const [id, v] of targets) {
    const e = byId.get(id);
    if (!e) continue;
    if (e.path === 'email') change.email = String(scalar(v));
    else if (e.path === 'name') change.name = String(scalar(v));
    else if (e.path === 'email_verified') change.email_verified = v === true;
    else if (e.path.startsWith('metadata.')) (change.metadata ??= {})[e.path.slice(9)] = Array.isArray(v) ? v : scalar(v);
  }
  return change.email ? change : null;
}

/**
 * How a row relates to the user with its address: `same` changes nothing; `fill` only sets what the
 * user lacks (an update); `conflict` would overwrite a value the user has (a review task).
 */
export function compareWithUser(u: User, c: PendingChange): 'same' | 'fill' | 'conflict' {
  let fill = false;
  const cmp = (cur: unknown, next: unknown) => {
    if (next === undefined || JSON.stringify(cur) === JSON.stringify(next)) return 'same';
    return cur === null || cur === undefined || cur === '' ? 'fill' : 'conflict';
  };
  const checks = [cmp(u.name, c.name), ...Object.entries(c.metadata ?? {}).map(([k, v]) => cmp(u.metadata?.[k], v))];
  // An unverified address may be marked verified; un-verifying one is a conflict.
  if (c.email_verified !== undefined && c.email_verified !== u.email_verified) checks.push(c.email_verified ? 'fill' : 'conflict');
  if (checks.includes('conflict')) return 'conflict';
  for (const x of checks) if (x === 'fill') fill = true;
  return fill ? 'fill' : 'same';
}
