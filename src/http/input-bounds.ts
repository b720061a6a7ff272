import { ValidationError } from '../errors.js';

/** Deepest nesting any request value may have; the deepest documented body (client jwks.keys[]) needs 4. */
export const MAX_INPUT_DEPTH = 32;

/**
 * The checks every request value passes before any schema or handler sees it, so no route can forget
 * them: no NUL in any string or key (Postgres text refuses it), no nesting deeper than MAX_INPUT_DEPTH
 * (free-form fields such as user metadata are otherwise unbounded), and no number JSON cannot carry
 * back (1e400 parses to Infinity). Size is bounded by the body limit. Throws 422 validation_error
 * (400 invalid_request on OAuth endpoints) naming the field.
 */
export function checkInput(value: unknown): void {
  const bad = firstProblem(value, 0, '');
  if (bad) throw new ValidationError({ [bad.field || '_']: [bad.message] });
}

interface Problem { field: string; message: string }

function firstProblem(v: unknown, depth: number, field: string): Problem | null {
  if (typeof v === 'string') return v.includes('\u0000') ? { field, message: 'must not contain NUL characters' } : null;
  if (typeof v === 'number') return Number.isFinite(v) ? null : { field, message: 'is out of range' };
  if (v === null || typeof v !== 'object') return null;
  if (depth >= MAX_INPUT_DEPTH) return { field, message: `is nested deeper than ${MAX_INPUT_DEPTH} levels` };
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const p = firstProblem(v[i], depth + 1, field ? `${field}.${i}` : String(i));
      if (p) return p;
    }
    return null;
  }
  for (const k in v) {
    const f = field ? `${field}.${k}` : k;
    if (k.includes('\u0000')) return { field: f.replace(/\u0000/g, '\\u0000'), message: 'must not contain NUL characters' };
    const p = firstProblem((v as Record<string, unknown>)[k], depth + 1, f);
    if (p) return p;
  }
  return null;
}
