import { parse } from 'csv-parse/sync';
import t from 'tap';
import { adminOf } from '../admin/helpers.js';
import { startTestServer } from '../helpers/server.js';
import { hundredRowCsv, userMapping } from './fixtures.js';

// Logs are captured at trace level so the test can say that no raw value reached them.
const logged: string[] = [];
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
  const s = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
  if (s.startsWith('{"level"')) { logged.push(s); return true; }
  return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
}) as typeof process.stdout.write;
t.teardown(() => { process.stdout.write = write; });

const srv = await startTestServer({ LOG_LEVEL: 'trace' });
t.teardown(() => srv.close());
const { call, tenantId } = await adminOf(srv, ['admin:*'], 'fmprev');

/** Rows of every table in the database: the preview must leave every count as it was. */
/** Rows of this test's tenant in every table that has a tenant_id (other test files write the shared database meanwhile). */
async function tableCounts(): Promise<Record<string, number>> {
  const tables = await srv.deps.sql<{ t: string }[]>`
    select c.table_name as t from information_schema.columns c join information_schema.tables x using (table_schema, table_name)
    where c.table_schema = 'public' and x.table_type = 'BASE TABLE' and c.column_name = 'tenant_id' order by 1`;
  const out: Record<string, number> = {};
  for (const { t } of tables) out[t] = Number((await srv.deps.sql.unsafe(`select count(*)::int as n from "${t}" where tenant_id = $1`, [tenantId]))[0]!.n);
  return out;
}

const rows = parse(hundredRowCsv(), { columns: true, skip_empty_lines: true }) as Record<string, string>[];
const body = (over: Record<string, unknown> = {}) => ({ rows, ...userMapping(), ...over });

t.test('a 100-row CSV: exact summary, per-row reasons, suggestions; nothing stored', async (t) => {
  const before = await tableCounts();
  const res = await call('POST', '/api/admin/field-mapping/preview/csv', body());
  t.equal(res.status, 200, JSON.stringify(res.body).slice(0, 300));
  t.same(res.body.preview, { protocol: 'csv', persisted: false, maxRows: 100 });
  t.equal(res.body.status, 'partial');
  t.same(res.body.summary, { total: 100, success: 60, partial: 20, failed: 20 });
  const r = res.body.rowResults;
  t.equal(r.length, 100);
  t.same(r[0], {
    index: 0, status: 'success', reasons: [],
    targets: ['email', 'name', 'phone', 'email_verified', 'team'].map((ref) => ({
      targetRef: ref, path: { email: 'email', name: 'name', phone: 'metadata.phone', email_verified: 'email_verified', team: 'metadata.team' }[ref],
      classification: ref === 'email_verified' || ref === 'team' ? 'internal' : 'pii',
      valueType: { email: 'email', name: 'string', phone: 'phone', email_verified: 'boolean', team: 'string' }[ref], present: true, fingerprint: r[0].targets.find((x: any) => x.targetRef === ref).fingerprint,
    })),
  });
  t.same(r[60].reasons, [{ code: 'required_missing', severity: 'warning', targetRef: 'name' }]);
  t.same(r[75].reasons, [{ code: 'not_allowed_value', severity: 'warning', targetRef: 'team' }]);
  t.same(r[80].reasons, [{ code: 'invalid_email', severity: 'error', targetRef: 'email' }, { code: 'required_missing', severity: 'error', targetRef: 'email' }]);
  t.same(r[85].reasons, [{ code: 'invalid_phone', severity: 'error', targetRef: 'phone' }]);
  t.same(r[90].reasons, [{ code: 'invalid_boolean', severity: 'error', targetRef: 'email_verified' }]);
  t.equal(r[95].status, 'failed');
  t.same(r[95].reasons[0], { code: 'required_column_missing', severity: 'error', targetRef: 'column:E-Mail' });
  t.same(res.body.headerSuggestions, [], 'Shoe size matches no target');
  t.same(await tableCounts(), before, 'no table changed (not even the audit log)');
});

t.test('raw source values never in the response or the logs', async (t) => {
  logged.length = 0;
  const marker = 'Zanzibar-Quetzalcoatl';
  const res = await call('POST', '/api/admin/field-mapping/preview/csv', body({
    rows: [{ 'E-Mail': `${marker}@example.com`, First: marker, Last: marker, Phone: marker, Verified: marker, Team: marker, Note: marker }],
  }));
  t.equal(res.status, 200);
  t.equal(res.body.summary.failed, 1);
  t.notMatch(JSON.stringify(res.body), /zanzibar|quetzalcoatl/i);
  t.ok(logged.length > 0, 'the request was logged');
  t.notMatch(logged.join(''), /zanzibar|quetzalcoatl/i);
});

t.test('limits answer 422 validation_error naming the path', async (t) => {
  const many = await call('POST', '/api/admin/field-mapping/preview/csv', body({ rows: Array.from({ length: 101 }, () => rows[0]) }));
  t.equal(many.status, 422);
  t.equal(many.body.error, 'validation_error');
  t.ok(many.body.details.rows, JSON.stringify(many.body.details));
  const wide = await call('POST', '/api/admin/field-mapping/preview/csv', body({ rows: [Object.fromEntries(Array.from({ length: 201 }, (_, i) => [`c${i}`, 'x']))] }));
  t.equal(wide.status, 422);
  t.ok(wide.body.details['rows.0'], JSON.stringify(wide.body.details));
  const m = userMapping();
  const edges = Array.from({ length: 490 }, (_, i) => ({ id: `x${i}`, sourceRef: 'src.email', targetRef: 'email' }));
  const tooMany = await call('POST', '/api/admin/field-mapping/preview/csv', body({ edges: [...m.edges, ...edges] }));
  t.equal(tooMany.status, 422);
  t.same(tooMany.body.details, { transforms: ['edges and transforms together must be at most 500'] });
  const rules = Array.from({ length: 251 }, (_, i) => ({ id: `r${i}`, kind: 'required', targetRef: 'email', severity: 'warning' }));
  const tooManyRules = await call('POST', '/api/admin/field-mapping/preview/csv', body({ validationRules: rules }));
  t.equal(tooManyRules.status, 422);
  t.ok(tooManyRules.body.details.validationRules);
  let deep: Record<string, unknown> = { v: 1 };
  for (let i = 0; i < 12; i++) deep = { d: deep };
  const t2 = m.transforms!.map((x, i) => (i === 0 ? { ...x, parameters: deep } : x));
  const tooDeep = await call('POST', '/api/admin/field-mapping/preview/csv', body({ transforms: t2 }));
  t.equal(tooDeep.status, 422);
  t.same(tooDeep.body.details, { body: ['must nest at most 12 levels'] });
  const big = 'y'.repeat(4000);
  const huge = await call('POST', '/api/admin/field-mapping/preview/csv', body({ rows: Array.from({ length: 40 }, () => ({ ...rows[0], First: big })) }));
  t.equal(huge.status, 422);
  t.same(huge.body.details, { body: [`must be at most ${128 * 1024} bytes`] });
  const badRef = await call('POST', '/api/admin/field-mapping/preview/csv', body({ edges: [{ id: 'e', sourceRef: 'src.email', targetRef: 'nope' }] }));
  t.equal(badRef.status, 422);
  t.same(badRef.body.details, { 'edges.0.targetRef': ['is not a catalog entry id'], 'transforms.0.inputEdgeIds.0': ['is not an edge or an earlier transform'], 'transforms.1.inputEdgeIds.0': ['is not an edge or an earlier transform'], 'transforms.1.inputEdgeIds.1': ['is not an edge or an earlier transform'], 'transforms.2.inputEdgeIds.0': ['is not an edge or an earlier transform'], 'transforms.3.inputEdgeIds.0': ['is not an edge or an earlier transform'], 'transforms.4.inputEdgeIds.0': ['is not an edge or an earlier transform'] });
});

t.test('needs a token with the field-mapping permission', async (t) => {
  const { call: reader } = await adminOf(srv, ['admin:users:read'], 'fmprev-r');
  t.equal((await reader('POST', '/api/admin/field-mapping/preview/csv', body())).status, 403);
});
