// Import throughput and preview latency against a running svc (issue 15), through the public admin API:
//   node dist/perf/import-bench.js --url http://127.0.0.1:8080 --bootstrap .data/bootstrap.json [--rows 100000] [--previews 50]
// The svc must run its jobs worker (QUEUE_WORKERS=true, the default of `svc start`).
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';

const arg = (name: string, dflt: string) => { const i = process.argv.indexOf(`--${name}`); return i > 0 ? process.argv[i + 1] ?? dflt : dflt; };
const url = arg('url', 'http://127.0.0.1:8080');
const boot = JSON.parse(fs.readFileSync(arg('bootstrap', '.data/bootstrap.json'), 'utf8')) as { admin_access_token?: string; admin?: { access_token?: string } };
const token = boot.admin_access_token ?? boot.admin?.access_token;
if (!token) throw new Error('no admin access token in the bootstrap file');
const rows = Number(arg('rows', '100000'));
const previews = Number(arg('previews', '50'));
const run = randomBytes(3).toString('hex');

const catalog = { entries: [
  { id: 'email', namespace: 'user', path: 'email', valueType: 'email', cardinality: 'one', classification: 'pii', required: true },
  { id: 'name', namespace: 'user', path: 'name', valueType: 'string', cardinality: 'one', classification: 'pii' },
] };
const columnToPath = { Email: 'src.email', First: 'src.first', Last: 'src.last' };
const edges = [{ id: 'e1', sourceRef: 'src.email', targetRef: 'email' }, { id: 'e2', sourceRef: 'src.first', targetRef: 'name' }, { id: 'e3', sourceRef: 'src.last', targetRef: 'name' }];
const transforms = [
  { id: 't1', inputEdgeIds: ['e1'], operation: 'normalize', parameters: { kind: 'email' }, outputTargetRef: 'email' },
  { id: 't2', inputEdgeIds: ['e2', 'e3'], operation: 'concat', parameters: { separator: ' ' }, outputTargetRef: 'name' },
];
const mapping = { catalog, columnToPath, edges, transforms, validationRules: [{ id: 'r1', kind: 'required', targetRef: 'email', severity: 'error' }] };

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(url + path, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}
const pct = (xs: number[], p: number) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!; };

// Preview: 100 rows, a tenth of them bad, sequentially.
const previewRows = Array.from({ length: 100 }, (_, i) => ({ Email: i % 10 === 9 ? 'not-an-email' : `p${i}-${run}@example.com`, First: 'Ada', Last: `L${i}` }));
const times: number[] = [];
for (let i = 0; i < previews; i++) {
  const t0 = performance.now();
  const r = await call('POST', '/api/admin/field-mapping/preview/csv', { rows: previewRows, ...mapping });
  times.push(performance.now() - t0);
  if (r.status !== 200) throw new Error(`preview answered ${r.status}: ${JSON.stringify(r.body)}`);
}
console.log(`preview (100 rows, ${previews} sequential): p50 ${pct(times, 50).toFixed(1)} ms, p95 ${pct(times, 95).toFixed(1)} ms`);

// Import: `rows` new users.
const csv = ['Email,First,Last', ...Array.from({ length: rows }, (_, i) => `u${i}-${run}@example.com,Ada,L${i}`)].join('\n') + '\n';
const t0 = performance.now();
const created = await call('POST', '/api/admin/user-imports', { mapping, csv });
if (created.status !== 202 && created.status !== 201) throw new Error(`import answered ${created.status}: ${JSON.stringify(created.body)}`);
const id = created.body.id as string;
let job: any;
for (;;) {
  job = (await call('GET', `/api/admin/user-imports/${id}`)).body;
  if (['succeeded', 'failed', 'cancelled'].includes(job.status)) break;
  await new Promise((r) => setTimeout(r, 250));
}
const secs = (performance.now() - t0) / 1000;
console.log(`import of ${rows} rows: ${job.status} in ${secs.toFixed(1)} s = ${(rows / secs).toFixed(0)} users/s; counts ${JSON.stringify(job.counts)}`);
