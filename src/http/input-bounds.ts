import { ValidationError } from '../errors.js';

/** Deepest nesting any request value may have; the deepest documented body (client jwks.keys[]) needs 4. */
export const MAX_INPUT_DEPTH = 32;

/**
 * The checks every request value passes before any schema or handler sees it, so no route can forget
 * them: no NUL in any string or key (Postgres text refuses it), no lone UTF-16 surrogate (JSON's \ud800
 * escapes parse to one; no UTF-8 can carry it, and Postgres refuses it in JSON, such as the audit
 * entry that records the value), no nesting deeper than MAX_INPUT_DEPTH
 * (free-form fields such as user metadata are otherwise unbounded), and no number JSON cannot carry
 * back (1e400 parses to Infinity). Size is bounded by the body limit. Throws 422 validation_error
 * (400 invalid_request on OAuth endpoints) naming the field; `field` names a value parsed from inside a
 * request field (JSON text in a string), whose problems are that field's.
 */
export function checkInput(value: unknown, field = ''): void {
  const bad = firstProblem(value, 0, field);
  if (bad) throw new ValidationError({ [bad.field || '_']: [bad.message] });
}

interface Problem { field: string; message: string }

/** What is wrong with a string or key, if anything. */
export function textProblem(s: string): string | null {
  if (s.includes('\u0000')) return 'must not contain NUL characters';
  // ES2024's String.prototype.isWellFormed (Node 20): false exactly when a surrogate is unpaired.
  if (!(s as unknown as { isWellFormed(): boolean }).isWellFormed()) return 'must not contain unpaired UTF-16 surrogates';
  return null;
}

function firstProblem(v: unknown, depth: number, field: string): Problem | null {
  if (typeof v === 'string') { const m = textProblem(v); return m ? { field, message: m } : null; }
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
    const bad = textProblem(k);
    if (bad) return { field: printable(f), message: bad };
    const p = firstProblem((v as Record<string, unknown>)[k], depth + 1, f);
    if (p) return p;
  }
  return null;
}

/** A field name fit to echo in details: NUL and lone surrogates as their JSON escapes. */
function printable(f: string): string {
  return f.replace(/\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
