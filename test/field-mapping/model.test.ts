import t from 'tap';
import { applyMapping, rowStatus } from '../../src/field-mapping/apply.js';
import { checkMapping, depthOf } from '../../src/field-mapping/check-mapping.js';
import type { Mapping } from '../../src/field-mapping/model.js';
import { normalizeEmail, normalizePhone } from '../../src/field-mapping/normalize.js';
import { previewCsv, suggestHeaders } from '../../src/field-mapping/preview.js';
import { OPS } from '../../src/field-mapping/transforms.js';
import { userMapping } from './fixtures.js';

t.test('transform operations', async (t) => {
  t.same(OPS.copy(['a'], {}), { value: 'a' });
  t.same(OPS.trim(['  a b '], {}), { value: 'a b' });
  t.same(OPS.trim([[' a', 'b ']], {}), { value: ['a', 'b'] });
  t.same(OPS.case(['AbC'], { to: 'upper' }), { value: 'ABC' });
  t.same(OPS.case(['AbC'], {}), { value: 'abc' });
  t.same(OPS.split(['a; b;;c'], { separator: ';' }), { value: ['a', 'b', 'c'] });
  t.same(OPS.split([''], {}), { value: null });
  t.same(OPS.join([['a', 'b'], 'c'], { separator: '|' }), { value: 'a|b|c' });
  t.same(OPS.first([['', 'x', 'y']], {}), { value: 'x' });
  t.same(OPS.concat(['Ada', '', 'Lovelace'], { separator: ' ' }), { value: 'Ada Lovelace' });
  t.same(OPS.concat(['', null], {}), { value: null });
  t.same(OPS.fallback(['', null, 'b', 'c'], {}), { value: 'b' });
  for (const s of ['yes', 'TRUE', '1', 'on', 'Y']) t.same(OPS.text_to_boolean([s], {}), { value: true }, s);
  for (const s of ['no', 'False', '0', 'off']) t.same(OPS.text_to_boolean([s], {}), { value: false }, s);
  t.same(OPS.text_to_boolean(['maybe'], {}), { failure: 'invalid_boolean' });
  t.same(OPS.normalize([' Ada@Example.COM '], { kind: 'email' }), { value: 'ada@example.com' });
  t.same(OPS.normalize(['nope'], { kind: 'email' }), { failure: 'invalid_email' });
  t.same(OPS.normalize(['(020) 7946-0018'], { kind: 'phone', defaultCountryCode: '+44' }), { value: '+442079460018' });
  t.same(OPS.normalize(['12'], { kind: 'phone', defaultCountryCode: '44' }), { failure: 'invalid_phone' });
});

t.test('normalizers', async (t) => {
  t.equal(normalizePhone('0044 20 7946 0018'), '+442079460018');
  t.equal(normalizePhone('+1 (415) 555-2671'), '+14155552671');
  t.equal(normalizePhone('415 555 2671'), null, 'a national number without a default country code');
  t.equal(normalizePhone('+0123456789'), null);
  t.equal(normalizeEmail('a@b'), null);
  t.equal(normalizeEmail('A.B@Sub.Example.org'), 'a.b@sub.example.org');
});

t.test('a row through the mapping: targets and reasons', async (t) => {
  const m = userMapping();
  const good = applyMapping(m, { 'E-Mail': ' Ada@Example.com', First: 'Ada', Last: 'Lovelace', Phone: '020 7946 0018', Verified: 'yes', Team: 'Red' });
  t.same(Object.fromEntries(good.targets), { email: 'ada@example.com', name: 'Ada Lovelace', phone: '+442079460018', email_verified: true, team: 'red' });
  t.same(good.reasons, []);
  t.equal(rowStatus(good.reasons), 'success');
  const warn = applyMapping(m, { 'E-Mail': 'b@example.com', Team: 'green' });
  t.same(warn.reasons, [{ code: 'required_missing', severity: 'warning', targetRef: 'name' }, { code: 'not_allowed_value', severity: 'warning', targetRef: 'team' }]);
  t.equal(rowStatus(warn.reasons), 'partial');
  const bad = applyMapping(m, { 'E-Mail': '', Team: 'purple', Verified: 'maybe' });
  t.same(bad.reasons.map((r) => `${r.code}:${r.targetRef}:${r.severity}`).sort(), [
    'invalid_boolean:email_verified:error', 'not_allowed_value:team:error', 'not_allowed_value:team:warning',
    'required_column_missing:column:E-Mail:error', 'required_missing:email:error', 'required_missing:name:warning',
  ]);
  t.equal(rowStatus(bad.reasons), 'failed');
});

t.test('rules: type, format, cardinality, split into a one-valued target', async (t) => {
  const m: Mapping = {
    catalog: { entries: [
      { id: 'tags', namespace: 'u', path: 'metadata.tags', valueType: 'string', cardinality: 'many', classification: 'public' },
      { id: 'first_tag', namespace: 'u', path: 'metadata.first', valueType: 'string', cardinality: 'one', classification: 'public' },
      { id: 'age', namespace: 'u', path: 'metadata.age', valueType: 'string', cardinality: 'one', classification: 'public' },
    ] },
    columnToPath: { tags: 'tags', age: 'age' },
    edges: [{ id: 'e1', sourceRef: 'tags', targetRef: 'tags' }, { id: 'e2', sourceRef: 'age', targetRef: 'age' }],
    transforms: [
      { id: 't1', inputEdgeIds: ['e1'], operation: 'split', parameters: { separator: '|' }, outputTargetRef: 'tags' },
      { id: 't2', inputEdgeIds: ['t1'], operation: 'first', outputTargetRef: 'first_tag' },
    ],
    validationRules: [
      { id: 'r1', kind: 'cardinality', targetRef: 'tags', severity: 'warning', parameters: { max: 2 } },
      { id: 'r2', kind: 'type', targetRef: 'age', severity: 'error', parameters: { valueType: 'integer' } },
      { id: 'r3', kind: 'format', targetRef: 'first_tag', severity: 'error', parameters: { pattern: '^[a-z]+$' } },
    ],
  };
  const r = applyMapping(m, { tags: 'a|b|c', age: '4x' });
  t.same(Object.fromEntries(r.targets), { tags: ['a', 'b', 'c'], age: '4x', first_tag: 'a' });
  t.same(r.reasons.map((x) => x.code), ['cardinality_mismatch', 'type_mismatch']);
});

t.test('checkMapping names the path of each bad reference', async (t) => {
  const m = userMapping();
  m.edges.push({ id: 'e_email', sourceRef: 'src.x', targetRef: 'nowhere' });
  m.transforms!.push({ id: 't_late', inputEdgeIds: ['t_future'], operation: 'copy', outputTargetRef: 'email' });
  m.validationRules!.push({ id: 'r_bad', kind: 'required', targetRef: 'ghost', severity: 'error' });
  m.columnToPath.Deep = Array.from({ length: 13 }, (_, i) => `p${i}`).join('.');
  t.same(checkMapping(m), {
    'columnToPath.Deep': ['must be at most 12 segments deep'],
    'edges.6.id': ['is a duplicate id'],
    'edges.6.targetRef': ['is not a catalog entry id'],
    'transforms.5.inputEdgeIds.0': ['is not an edge or an earlier transform'],
    'validationRules.2.targetRef': ['is not a catalog entry id'],
  });
  t.same(checkMapping(userMapping()), {});
  t.equal(depthOf({ a: { b: [1] } }), 3);
});

t.test('preview: no values, fingerprints equal for equal values within one preview only', async (t) => {
  const m = userMapping();
  const rows = [
    { 'E-Mail': 'Secret.Person@Example.com', First: 'Zebediah', Last: 'Quux', Verified: 'yes', Team: 'red', Extra: 'x' },
    { 'E-Mail': 'secret.person@example.com ', First: 'Zebediah', Last: 'Quux', Verified: 'yes', Team: 'red' },
  ];
  const p = previewCsv(m, rows);
  const text = JSON.stringify(p);
  t.notMatch(text, /zebediah|secret\.person|quux/i, 'no raw value appears');
  const fp = (i: number) => p.rowResults[i]!.targets.find((x) => x.targetRef === 'email')!.fingerprint;
  t.equal(fp(0), fp(1), 'the same normalized email has the same fingerprint');
  t.not(previewCsv(m, rows).rowResults[0]!.targets[0]!.fingerprint, p.rowResults[0]!.targets[0]!.fingerprint, 'another preview, another salt');
  t.same(p.summary, { total: 2, success: 2, partial: 0, failed: 0 });
  t.equal(p.status, 'success');
});

t.test('header suggestions', async (t) => {
  const s = suggestHeaders(userMapping().catalog, ['Mobile Phone', 'email_address', 'Shoe size', 'Team Colour']);
  t.same(s.map((x) => [x.column, x.targetRef, x.confidence]), [['Mobile Phone', 'phone', 0.8], ['email_address', 'email', 0.8], ['Team Colour', 'team', 0.5]]);
});
