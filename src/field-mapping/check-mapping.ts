import type { Details } from '../errors.js';
import { LIMITS, type Mapping } from './model.js';

const PATH = /^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*$/;

/** Nesting depth of a JSON value (a scalar is 0). */
export function depthOf(v: unknown, limit = Infinity, d = 0): number {
  if (v === null || typeof v !== 'object' || d > limit) return d;
  let max = d + 1;
  for (const x of Object.values(v as object)) max = Math.max(max, depthOf(x, limit, d + 1));
  return max;
}

/**
 * What a schema cannot say of a mapping: references resolve (edges to catalog entries, transforms to
 * earlier edges or transforms, rules to entries), ids are unique, paths are dotted names no deeper
 * than the limit, and the combined limits hold. Returns the problems keyed by path (empty: valid).
 */
export function checkMapping(m: Mapping): Details {
  const out: Details = {};
  const add = (k: string, msg: string) => { (out[k] ??= []).push(msg); };
  const entries = new Set<string>();
  m.catalog.entries.forEach((e, i) => {
    if (entries.has(e.id)) add(`catalog.entries.${i}.id`, 'is a duplicate id');
    entries.add(e.id);
    if (!PATH.test(e.path)) add(`catalog.entries.${i}.path`, 'must be a dotted name');
    else if (e.path.split('.').length > LIMITS.depth) add(`catalog.entries.${i}.path`, `must be at most ${LIMITS.depth} segments deep`);
  });
  for (const [col, p] of Object.entries(m.columnToPath)) {
    if (!PATH.test(p)) add(`columnToPath.${col}`, 'must be a dotted name');
    else if (p.split('.').length > LIMITS.depth) add(`columnToPath.${col}`, `must be at most ${LIMITS.depth} segments deep`);
  }
  const transforms = m.transforms ?? [];
  const rules = m.validationRules ?? [];
  if (m.edges.length + transforms.length > LIMITS.edgesAndTransforms) add('transforms', `edges and transforms together must be at most ${LIMITS.edgesAndTransforms}`);
  if (rules.length > LIMITS.rules) add('validationRules', `must have at most ${LIMITS.rules} items`);
  const known = new Set<string>();
  m.edges.forEach((e, i) => {
    if (known.has(e.id)) add(`edges.${i}.id`, 'is a duplicate id');
    known.add(e.id);
    if (!PATH.test(e.sourceRef)) add(`edges.${i}.sourceRef`, 'must be a dotted name');
    if (!entries.has(e.targetRef)) add(`edges.${i}.targetRef`, 'is not a catalog entry id');
  });
  transforms.forEach((t, i) => {
    if (known.has(t.id)) add(`transforms.${i}.id`, 'is a duplicate id');
    t.inputEdgeIds.forEach((ref, j) => { if (!known.has(ref)) add(`transforms.${i}.inputEdgeIds.${j}`, 'is not an edge or an earlier transform'); });
    known.add(t.id);
    if (!entries.has(t.outputTargetRef)) add(`transforms.${i}.outputTargetRef`, 'is not a catalog entry id');
  });
  const ruleIds = new Set<string>();
  rules.forEach((r, i) => {
    if (ruleIds.has(r.id)) add(`validationRules.${i}.id`, 'is a duplicate id');
    ruleIds.add(r.id);
    if (!entries.has(r.targetRef)) add(`validationRules.${i}.targetRef`, 'is not a catalog entry id');
    if (r.kind === 'format' && r.parameters?.pattern !== undefined) {
      try { new RegExp(String(r.parameters.pattern), 'u'); } catch { add(`validationRules.${i}.parameters.pattern`, 'is not a valid regular expression'); }
    }
  });
  return out;
}
