import type { CatalogEntry, Mapping, Reason, Row, ValidationRule, Value, ValueType } from './model.js';
import { isE164, isEmail } from './normalize.js';
import { OPS, present } from './transforms.js';

/** One row mapped: the value of every catalog target it sets, and the reasons it is doubtful or refused. */
export interface Mapped { targets: Map<string, Value>; reasons: Reason[] }

const LOCALE = /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/i;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** Whether a single value has the catalog type (CSV cells are text, so an integer may come as digits). */
export function hasType(v: Value, t: ValueType): boolean {
  if (Array.isArray(v) || v === null) return false;
  const s = String(v);
  switch (t) {
    case 'string': return typeof v === 'string';
    case 'boolean': return typeof v === 'boolean';
    case 'integer': return typeof v === 'number' ? Number.isInteger(v) : /^-?\d{1,15}$/.test(s);
    case 'email': return isEmail(s);
    case 'uri': try { return /^[a-z][a-z0-9+.-]*:/i.test(s) && Boolean(new URL(s)); } catch { return false; }
    case 'date': return DATE.test(s) && !Number.isNaN(Date.parse(`${s}T00:00:00Z`));
    case 'datetime': return /^\d{4}-\d{2}-\d{2}T/.test(s) && !Number.isNaN(Date.parse(s));
    case 'phone': return isE164(s);
    case 'locale': return LOCALE.test(s);
  }
}

/** Source values of a row: each mapped column's cell under its source path. */
function sourceOf(m: Mapping, row: Row): Map<string, Value> {
  const src = new Map<string, Value>();
  for (const [col, path] of Object.entries(m.columnToPath)) if (Object.hasOwn(row, col)) src.set(path, row[col] ?? null);
  return src;
}

function ruleReasons(rule: ValidationRule, entry: CatalogEntry, v: Value | undefined): string | null {
  const p = rule.parameters ?? {};
  const items = v === undefined || v === null ? [] : Array.isArray(v) ? v : [v];
  switch (rule.kind) {
    case 'required': return present(v) ? null : 'required_missing';
    case 'type': {
      const t = (typeof p.valueType === 'string' ? p.valueType : entry.valueType) as ValueType;
      return items.every((x) => hasType(x, t)) ? null : 'type_mismatch';
    }
    case 'enum': {
      const allowed = Array.isArray(p.values) ? p.values.map(String) : entry.allowedValues ?? [];
      return items.every((x) => allowed.includes(String(x))) ? null : 'not_allowed_value';
    }
    case 'format': {
      if (typeof p.pattern !== 'string') return null;
      const re = new RegExp(p.pattern, 'u');
      return items.every((x) => re.test(String(x))) ? null : 'format_mismatch';
    }
    case 'cardinality': {
      const min = typeof p.min === 'number' ? p.min : 0;
      const max = typeof p.max === 'number' ? p.max : entry.cardinality === 'one' ? 1 : Infinity;
      return items.length >= min && items.length <= max ? null : 'cardinality_mismatch';
    }
  }
}

/**
 * Maps one row: source values by path, edges copy them to targets, transforms (in order, each reading
 * edges or earlier transforms) set their output targets, then the catalog's own constraints (type,
 * cardinality, allowed values, required) and the mapping's rules are checked. A mapping is assumed
 * valid (checkMapping).
 */
export function applyMapping(m: Mapping, row: Row): Mapped {
  const reasons: Reason[] = [];
  const catalog = new Map(m.catalog.entries.map((e) => [e.id, e]));
  for (const col of m.requiredColumns ?? []) {
    const v = row[col];
    if (v === undefined || v === null || v === '') reasons.push({ code: 'required_column_missing', severity: 'error', targetRef: `column:${col}` });
  }
  const src = sourceOf(m, row);
  const values = new Map<string, Value>();
  const targets = new Map<string, Value>();
  for (const e of m.edges) {
    const v = src.get(e.sourceRef) ?? null;
    values.set(e.id, v);
    if (present(v)) targets.set(e.targetRef, v);
  }
  for (const t of m.transforms ?? []) {
    const out = OPS[t.operation](t.inputEdgeIds.map((id) => values.get(id) ?? null), t.parameters ?? {});
    if ('failure' in out) {
      reasons.push({ code: out.failure, severity: 'error', targetRef: t.outputTargetRef });
      values.set(t.id, null);
      targets.delete(t.outputTargetRef);
      continue;
    }
    values.set(t.id, out.value);
    // A transform's output replaces whatever an edge copied to the same target.
    if (present(out.value)) targets.set(t.outputTargetRef, out.value);
    else targets.delete(t.outputTargetRef);
  }
  for (const [id, v] of targets) {
    const entry = catalog.get(id)!;
    const items = Array.isArray(v) ? v : [v];
    if (entry.cardinality === 'one' && Array.isArray(v) && v.length !== 1) reasons.push({ code: 'cardinality_mismatch', severity: 'error', targetRef: id });
    else if (entry.cardinality === 'one' && Array.isArray(v)) targets.set(id, v[0]!);
    if (!items.every((x) => hasType(x, entry.valueType) || (entry.valueType === 'string' && typeof x === 'number')))
      reasons.push({ code: 'type_mismatch', severity: 'error', targetRef: id });
    else if (entry.allowedValues?.length && !items.every((x) => entry.allowedValues!.includes(String(x))))
      reasons.push({ code: 'not_allowed_value', severity: 'error', targetRef: id });
  }
  for (const e of m.catalog.entries) if (e.required && !targets.has(e.id)) reasons.push({ code: 'required_missing', severity: 'error', targetRef: e.id });
  for (const r of m.validationRules ?? []) {
    const code = ruleReasons(r, catalog.get(r.targetRef)!, targets.get(r.targetRef));
    if (code) reasons.push({ code, severity: r.severity, targetRef: r.targetRef });
  }
  return { targets, reasons };
}

/** A row's outcome from its reasons: any error fails it, warnings alone make it partial. */
export function rowStatus(reasons: Reason[]): 'success' | 'partial' | 'failed' {
  if (reasons.some((r) => r.severity === 'error')) return 'failed';
  return reasons.length ? 'partial' : 'success';
}
