#!/usr/bin/env node
// Compiles every JSON Schema in schemas/ ahead of time with Ajv standalone code generation,
// so no schema is compiled at process start or per request. Output: src/generated/ (not committed).
// Schemas under schemas/query/ and schemas/form/ describe string-valued inputs and are compiled
// with type coercion; all others (JSON bodies, responses) are compiled strictly.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import standaloneCode from 'ajv/dist/standalone/index.js';
import { compile as toTypeScript } from 'json-schema-to-typescript';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const schemaDir = path.join(root, 'schemas');
const outDir = path.join(root, 'src', 'generated');

function walk(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(path.join(dir, e.name)) : e.name.endsWith('.json') ? [path.join(dir, e.name)] : []);
}

const files = walk(schemaDir).sort();
const all = files.map((f) => {
  const schema = JSON.parse(fs.readFileSync(f, 'utf8'));
  if (!schema.$id) throw new Error(`${path.relative(root, f)} has no $id`);
  const rel = path.relative(schemaDir, f);
  // One naming convention: the $id is the schema's folder and file name, `admin/user.json` -> `admin.user`.
  const want = rel.replace(/\.json$/, '').split(path.sep).join('.');
  if (schema.$id !== want) throw new Error(`${path.relative(root, f)} has $id "${schema.$id}"; the convention wants "${want}"`);
  return { file: rel, id: schema.$id, schema, coerce: rel.startsWith('query/') || rel.startsWith('form/') };
});
const seen = new Set();
for (const s of all) { if (seen.has(s.id)) throw new Error(`duplicate schema $id ${s.id}`); seen.add(s.id); }

/**
 * Response schemas mostly leave additionalProperties open (they document, clients tolerate extras), but
 * the test suite holds every reply to its schema exactly: this copy refuses properties a schema does not
 * name, wherever an object schema lists its properties and says nothing about others.
 */
function closed(node, inCombinator = false) {
  if (Array.isArray(node)) return node.map((n) => closed(n, inCombinator));
  if (!node || typeof node !== 'object') return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    out[k] = ['allOf', 'anyOf', 'oneOf'].includes(k) ? v.map((n) => closed(n, true))
      : ['properties', '$defs', 'patternProperties'].includes(k) ? Object.fromEntries(Object.entries(v).map(([n, sub]) => [n, closed(sub)]))
      : closed(v);
  }
  if (out.properties && !inCombinator && !('additionalProperties' in out) && !('unevaluatedProperties' in out) && !('patternProperties' in out)) out.unevaluatedProperties = false;
  return out;
}

/**
 * Request schemas: every integer is bounded to what JavaScript and a Postgres bigint both hold exactly
 * (2^53 - 1), unless the schema bounds it tighter, so `limit=1e20` or `expires_at: 1e20` is a 422, not
 * an overflow in Postgres.
 */
const SAFE = Number.MAX_SAFE_INTEGER;
function bounded(node) {
  if (Array.isArray(node)) return node.map(bounded);
  if (!node || typeof node !== 'object') return node;
  const out = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, k === 'default' || k === 'examples' || k === 'const' || k === 'enum' ? v : bounded(v)]));
  const types = Array.isArray(out.type) ? out.type : [out.type];
  if (types.includes('integer') || types.includes('number')) {
    if (!('maximum' in out) && !('exclusiveMaximum' in out)) out.maximum = SAFE;
    if (!('minimum' in out) && !('exclusiveMinimum' in out)) out.minimum = -SAFE;
  }
  return out;
}

function compile(coerce, strictResponses = false) {
  const ajv = new Ajv({
    allErrors: true, useDefaults: true, strict: true, strictRequired: false,
    // Unknown query and form parameters are ignored (docs/decisions.md; RFC 6749 3.2 for OAuth forms):
    // they are dropped where a schema closes its object, before the handler sees the data.
    removeAdditional: coerce,
    coerceTypes: coerce ? 'array' : false,
    // Form and query parameters are protocol strings (tokens, ids, URIs): their length limits count
    // UTF-16 units (String#length, never more lenient) instead of walking every token for surrogate
    // pairs, which was 7.5% of an introspection (perf/RESULTS.md run 19).
    unicode: !coerce,
    // Ajv calls that option deprecated (it still honours it); say so once here instead of per compile.
    logger: { log: console.log, error: console.error, warn: (...a) => { if (!String(a[0]).startsWith('DEPRECATED: option unicode')) console.warn(...a); } },
    code: { source: true, esm: true, optimize: true },
  });
  addFormats.default(ajv);
  ajv.addKeyword({ keyword: 'x-permission' });
  for (const s of all) ajv.addSchema(strictResponses ? closed(s.schema) : bounded(s.schema));
  const mapping = {};
  all.filter((s) => s.coerce === coerce).forEach((s, i) => { mapping[`v${i}`] = s.id; });
  const code = Object.keys(mapping).length ? standaloneCode(ajv, mapping) : '';
  return { code, mapping };
}

fs.mkdirSync(outDir, { recursive: true });
const header = '// GENERATED by ops/build-schemas.mjs from schemas/. Do not edit.\n// @ts-nocheck\n' +
  "import { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);\n";
const index = [];
for (const [name, coerce, responses] of [['strict', false, false], ['coerce', true, false], ['responses', false, true]]) {
  const { code, mapping } = compile(coerce, responses);
  fs.writeFileSync(path.join(outDir, `${name}.ts`), header + code + '\n');
  for (const [exp, id] of Object.entries(mapping)) index.push({ id, mod: name, exp });
}
const idx = ['// GENERATED by ops/build-schemas.mjs from schemas/. Do not edit.',
  '/** A compiled Ajv validator; its errors are set after a failed call. */',
  'export type ValidateFn = ((data: unknown) => boolean) & { errors?: Array<{ instancePath: string; keyword: string; message?: string; params: Record<string, any> }> | null };',
  "import * as strict from './strict.js';", "import * as coerce from './coerce.js';", "import * as responses from './responses.js';",
  'const mods: Record<string, Record<string, unknown>> = { strict, coerce, responses };',
  `const table: Array<[string, string, string]> = ${JSON.stringify(index.filter((e) => e.mod !== 'responses').map((e) => [e.id, e.mod, e.exp]))};`,
  `const closedTable: Array<[string, string, string]> = ${JSON.stringify(index.filter((e) => e.mod === 'responses').map((e) => [e.id, e.mod, e.exp]))};`,
  '/** Compiled validators by schema $id. */',
  'export const validators: Record<string, ValidateFn> = Object.fromEntries(table.map(([id, m, e]) => [id, mods[m]![e] as ValidateFn]));',
  '/** The same schemas closed to properties they do not name: the test suite checks every reply against these. */',
  'export const responseValidators: Record<string, ValidateFn> = Object.fromEntries(closedTable.map(([id, m, e]) => [id, mods[m]![e] as ValidateFn]));',
  '/** The source schemas by $id, for the OpenAPI document. */',
  `export const schemas: Record<string, any> = ${JSON.stringify(Object.fromEntries(all.map((s) => [s.id, s.schema])))};`,
  ''].join('\n');
fs.writeFileSync(path.join(outDir, 'index.ts'), idx);

// TypeScript declarations of every schema, so a route's validated body and query are typed by the
// same schema that checked them. A cross-schema $ref becomes a reference to that schema's type.
const defOf = (ref) => {
  const [id, name] = ref.split('#/$defs/');
  const def = all.find((s) => s.id === id)?.schema.$defs?.[name];
  if (!def) throw new Error(`$ref ${ref} names no definition`);
  return def;
};
const typeName = (id) => id.split(/[.-]/).map((w) => w[0].toUpperCase() + w.slice(1)).join('');
const refsAsTypes = (node) => {
  if (Array.isArray(node)) return node.map(refsAsTypes);
  if (!node || typeof node !== 'object') return node;
  // A field defined in a shared schema's $defs (`common.client-metadata#/$defs/name`) is inlined.
  if (typeof node.$ref === 'string' && node.$ref.includes('#/$defs/')) {
    const { $ref, ...siblings } = node;
    return refsAsTypes({ ...defOf($ref), ...siblings });
  }
  if (typeof node.$ref === 'string' && !node.$ref.startsWith('#')) return { tsType: typeName(node.$ref) };
  const out = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, refsAsTypes(v)]));
  // Validation fills in defaults (useDefaults), so a property with a default is always there afterwards.
  if (out.properties) {
    const defaulted = Object.entries(out.properties).filter(([, v]) => v && typeof v === 'object' && 'default' in v).map(([k]) => k);
    if (defaulted.length) out.required = [...new Set([...(out.required ?? []), ...defaulted])];
  }
  return out;
};
const decls = [];
for (const s of all) {
  const { $id, title, ...rest } = s.schema;
  const ts = await toTypeScript({ ...refsAsTypes(rest), title: typeName($id) }, typeName($id), {
    bannerComment: '', format: false, declareExternallyReferenced: false, strictIndexSignatures: true, unknownAny: true,
  });
  decls.push(ts.trim());
}
const types = ['// GENERATED by ops/build-schemas.mjs from schemas/. Do not edit.', '/* eslint-disable */', ...decls,
  '/** Every schema\'s type by $id. */', 'export interface SchemaTypes {', ...all.map((s) => `  '${s.id}': ${typeName(s.id)};`), '}', ''].join('\n');
fs.writeFileSync(path.join(outDir, 'types.ts'), types);
console.log(`schemas: compiled ${all.length} schemas into src/generated/ (validators and types)`);
