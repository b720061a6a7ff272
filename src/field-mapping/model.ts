/**
 * The field-mapping model (docs/field-mapping.md): a catalog of canonical targets, CSV columns mapped to
 * source paths, edges copying source values to targets, transforms combining edge values, and
 * validation rules over the targets. Pure data; nothing here does I/O.
 */

export const VALUE_TYPES = ['string', 'boolean', 'integer', 'email', 'uri', 'date', 'datetime', 'phone', 'locale'] as const;
export const CLASSIFICATIONS = ['public', 'internal', 'pii', 'secret', 'credential'] as const;
export const OPERATIONS = ['copy', 'trim', 'case', 'split', 'join', 'first', 'concat', 'fallback', 'text_to_boolean', 'normalize'] as const;
export const RULE_KINDS = ['required', 'type', 'enum', 'format', 'cardinality'] as const;

export type ValueType = (typeof VALUE_TYPES)[number];
export type Classification = (typeof CLASSIFICATIONS)[number];
export type Operation = (typeof OPERATIONS)[number];
export type RuleKind = (typeof RULE_KINDS)[number];
export type Severity = 'error' | 'warning';

export interface CatalogEntry {
  id: string; namespace: string; path: string; valueType: ValueType; cardinality: 'one' | 'many';
  classification: Classification; required?: boolean | undefined; allowedValues?: string[] | undefined;
}
export interface Catalog { entries: CatalogEntry[] }
export interface Edge { id: string; sourceRef: string; targetRef: string }
export interface Transform { id: string; inputEdgeIds: string[]; operation: Operation; parameters?: Record<string, unknown> | undefined; outputTargetRef: string }
export interface ValidationRule { id: string; kind: RuleKind; targetRef: string; severity: Severity; parameters?: Record<string, unknown> | undefined }

export interface Mapping {
  catalog: Catalog;
  columnToPath: Record<string, string>;
  edges: Edge[];
  transforms?: Transform[] | undefined;
  validationRules?: ValidationRule[] | undefined;
  requiredColumns?: string[] | undefined;
}

/** A value after mapping: CSV cells are text; split yields lists; text_to_boolean yields booleans. */
export type Value = string | number | boolean | null | Value[];
export type Row = Record<string, string | number | boolean | null | undefined>;

/** Why a row is doubtful or refused; `targetRef` names the catalog entry (or `column:<name>`). */
export interface Reason { code: string; severity: Severity; targetRef: string }

/** Limits of the preview and of a mapping (issue 15); each is refused with 422 naming the path. */
export const LIMITS = Object.freeze({
  previewRows: 100,
  fieldsPerRow: 200,
  edgesAndTransforms: 500,
  rules: 250,
  previewBodyBytes: 128 * 1024,
  depth: 12,
  importRows: 100_000,
});
