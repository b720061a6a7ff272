import { createHmac, randomBytes } from 'node:crypto';
import { applyMapping, rowStatus } from './apply.js';
import { LIMITS, type Catalog, type Classification, type Mapping, type Reason, type Row, type Value, type ValueType } from './model.js';

/** What a preview says of a target a row would set: never its value, only what it is and a salted fingerprint. */
export interface TargetPreview {
  targetRef: string; path: string; classification: Classification; valueType: ValueType; present: boolean;
  /** HMAC-SHA-256 under a salt drawn for this preview only; absent for secret and credential targets. */
  fingerprint?: string;
}
export interface RowResult { index: number; status: 'success' | 'partial' | 'failed'; reasons: Reason[]; targets: TargetPreview[] }
export interface HeaderSuggestion { column: string; targetRef: string; path: string; confidence: number }
export interface Preview {
  protocol: 'csv'; persisted: false; maxRows: number; status: 'success' | 'partial' | 'failed';
  summary: { total: number; success: number; partial: number; failed: number };
  rowResults: RowResult[]; headerSuggestions: HeaderSuggestion[];
}

const canonical = (v: Value): string => JSON.stringify(v);

/** Fingerprints let an operator see that two rows share a value without seeing it; a fresh salt per preview stops lookups across previews. */
function fingerprinter(): (targetRef: string, v: Value) => string {
  const salt = randomBytes(32);
  return (ref, v) => createHmac('sha256', salt).update(ref).update('\0').update(canonical(v)).digest('base64url').slice(0, 22);
}

const squash = (s: string): string => s.toLowerCase().replace(/[^a-z0-9]/g, '');
// Common header spellings of the usual identity attributes.
const SYNONYMS: Record<string, string[]> = {
  email: ['email', 'emailaddress', 'mail', 'email1', 'primaryemail', 'username'],
  phone: ['phone', 'phonenumber', 'mobile', 'mobilephone', 'cell', 'telephone', 'tel'],
  name: ['name', 'fullname', 'displayname'],
  givenname: ['givenname', 'firstname', 'forename', 'first'],
  familyname: ['familyname', 'lastname', 'surname', 'last'],
  locale: ['locale', 'language', 'lang'],
  emailverified: ['emailverified', 'verified', 'isverified'],
};

/** Catalog entries an unmapped column probably means, by its normalized name against entry ids, paths and common synonyms. */
export function suggestHeaders(catalog: Catalog, columns: string[]): HeaderSuggestion[] {
  const out: HeaderSuggestion[] = [];
  for (const column of columns) {
    const c = squash(column);
    if (!c) continue;
    let best: HeaderSuggestion | null = null;
    let bestLen = 0;
    for (const e of catalog.entries) {
      const names = [squash(e.id), squash(e.path.split('.').pop() ?? ''), squash(e.path)];
      const syn = names.flatMap((n) => SYNONYMS[n] ?? []);
      // A partial match prefers the longest name it contains ("teamname" means team rather than name).
      const partial = names.filter((n) => n.length > 2 && (c.includes(n) || n.includes(c))).reduce((a, n) => Math.max(a, Math.min(n.length, c.length)), 0);
      const confidence = names.includes(c) ? 1 : syn.includes(c) ? 0.8 : partial ? 0.5 : 0;
      const len = confidence === 0.5 ? partial : 0;
      if (confidence > (best?.confidence ?? 0) || (best && confidence === best.confidence && len > bestLen)) {
        best = { column, targetRef: e.id, path: e.path, confidence };
        bestLen = len;
      }
    }
    if (best) out.push(best);
  }
  return out;
}

/**
 * The dry run of POST /api/admin/field-mapping/preview/csv: every row mapped and validated, described
 * without its values. Pure: nothing is stored, nothing is logged.
 */
export function previewCsv(m: Mapping, rows: Row[]): Preview {
  const fp = fingerprinter();
  const catalog = new Map(m.catalog.entries.map((e) => [e.id, e]));
  const summary = { total: rows.length, success: 0, partial: 0, failed: 0 };
  const rowResults = rows.map((row, index): RowResult => {
    const { targets, reasons } = applyMapping(m, row);
    const status = rowStatus(reasons);
    summary[status]++;
    const previews = [...targets].map(([ref, v]): TargetPreview => {
      const e = catalog.get(ref)!;
      const secret = e.classification === 'secret' || e.classification === 'credential';
      return { targetRef: ref, path: e.path, classification: e.classification, valueType: e.valueType, present: true, ...(secret ? {} : { fingerprint: fp(ref, v) }) };
    });
    return { index, status, reasons, targets: previews };
  });
  const mapped = new Set(Object.keys(m.columnToPath));
  const unmapped = [...new Set(rows.flatMap((r) => Object.keys(r)))].filter((c) => !mapped.has(c));
  const status = summary.success === summary.total ? 'success' : summary.failed === summary.total ? 'failed' : 'partial';
  return { protocol: 'csv', persisted: false, maxRows: LIMITS.previewRows, status, summary, rowResults, headerSuggestions: suggestHeaders(m.catalog, unmapped) };
}
