import type { Operation, Value } from './model.js';
import { normalizeEmail, normalizePhone } from './normalize.js';

/** A transform's outcome: its value (null: nothing to set), or the reason code it failed with. */
export type Outcome = { value: Value } | { failure: string };

type Op = (inputs: Value[], p: Record<string, unknown>) => Outcome;

const present = (v: Value | undefined): v is Value => v !== null && v !== undefined && v !== '' && !(Array.isArray(v) && v.length === 0);
const text = (v: Value): string => (Array.isArray(v) ? v.map(text).join(',') : v === null ? '' : String(v));
const str = (p: Record<string, unknown>, k: string, d: string): string => (typeof p[k] === 'string' ? (p[k] as string) : d);
/** Applies `f` to a value, or to each element of a list. */
const each = (v: Value, f: (s: string) => Value): Value => (Array.isArray(v) ? v.map((x) => each(x, f)) : v === null ? null : f(text(v)));

const TRUE = new Set(['true', 'yes', 'y', '1', 'on', 't']);
const FALSE = new Set(['false', 'no', 'n', '0', 'off', 'f']);

/** Each operation as a table entry: inputs are the values of the transform's input edges, in order. */
export const OPS: Record<Operation, Op> = {
  copy: ([v]) => ({ value: v ?? null }),
  trim: ([v]) => ({ value: each(v ?? null, (s) => s.trim()) }),
  case: ([v], p) => {
    const to = str(p, 'to', 'lower');
    return { value: each(v ?? null, (s) => (to === 'upper' ? s.toUpperCase() : s.toLowerCase())) };
  },
  split: ([v], p) => {
    if (!present(v)) return { value: null };
    const sep = str(p, 'separator', ',');
    return { value: text(v).split(sep).map((s) => s.trim()).filter((s) => s !== '') };
  },
  join: (inputs, p) => {
    const flat = inputs.flatMap((v) => (Array.isArray(v) ? v : [v])).filter(present);
    return { value: flat.length ? flat.map(text).join(str(p, 'separator', ',')) : null };
  },
  first: (inputs) => {
    const flat = inputs.flatMap((v) => (Array.isArray(v) ? v : [v]));
    return { value: flat.find(present) ?? null };
  },
  concat: (inputs, p) => {
    const parts = inputs.filter(present).map(text);
    return { value: parts.length ? parts.join(str(p, 'separator', '')) : null };
  },
  fallback: (inputs) => ({ value: inputs.find(present) ?? null }),
  text_to_boolean: ([v]) => {
    if (!present(v)) return { value: null };
    if (typeof v === 'boolean') return { value: v };
    const s = text(v).trim().toLowerCase();
    if (TRUE.has(s)) return { value: true };
    if (FALSE.has(s)) return { value: false };
    return { failure: 'invalid_boolean' };
  },
  normalize: ([v], p) => {
    if (!present(v)) return { value: null };
    const kind = str(p, 'kind', 'email');
    let bad = false;
    const out = each(v, (s) => {
      const n = kind === 'phone' ? normalizePhone(s, typeof p.defaultCountryCode === 'string' ? p.defaultCountryCode : undefined) : normalizeEmail(s);
      if (n === null) bad = true;
      return n;
    });
    return bad ? { failure: kind === 'phone' ? 'invalid_phone' : 'invalid_email' } : { value: out };
  },
};

export { present };
