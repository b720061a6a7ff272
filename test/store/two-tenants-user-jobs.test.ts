import t from 'tap';
import type { Mapping } from '../../src/field-mapping/model.js';
import { Store } from '../../src/store/index.js';
import { migrate } from '../../src/store/migrate.js';
import { tempDatabase } from '../helpers/db.js';
import { uniqueName } from '../helpers/env.js';
import { PiiVault } from '../../src/pii/vault.js';
import { loadConfig } from '../../src/config.js';

// Import/export jobs are per tenant: B's repository cannot read, list, start, cancel, checkpoint or
// download A's jobs, nor read A's file or row outcomes, and A's job is the same afterwards.
const db = await tempDatabase();
t.teardown(db.drop);
await migrate(db.sql);
const store = new Store(db.sql, PiiVault.fromConfig(loadConfig(), db.sql));
const [a, b] = [uniqueName('uj-a'), uniqueName('uj-b')];
for (const id of [a, b]) await db.sql`insert into tenants (id, name) values (${id}, ${id})`;
const A = store.forTenant(a).userJobs;
const B = store.forTenant(b).userJobs;
const m: Mapping = { catalog: { entries: [{ id: 'email', namespace: 'u', path: 'email', valueType: 'email', cardinality: 'one', classification: 'pii' }] }, columnToPath: { E: 'e' }, edges: [{ id: 'x', sourceRef: 'e', targetRef: 'email' }] };

t.test('B cannot see or change A\'s jobs', async (t) => {
  await A.insert('imp_1', 'import', m, 'admin-a', Buffer.from('E\na@example.com\n'));
  await A.start('imp_1');
  await A.recordRows('imp_1', [{ index: 0, outcome: 'rejected', userId: null, reasons: [{ code: 'x', severity: 'error', targetRef: 'email' }] }]);
  await A.insert('exp_1', 'export', m, 'admin-a', null);
  await A.start('exp_1');
  await A.finish('exp_1', 'succeeded', { totalRows: 1, resultCsv: Buffer.from('E\na@example.com\n'), expiresAt: Date.now() + 60_000 });
  const snap = async () => ({ imp: await A.get('imp_1', 'import'), exp: await A.get('exp_1', 'export'), list: await A.list('import', { limit: 10 }), rows: await A.doneRows('imp_1', 0, 10), rej: await A.rejections('imp_1', 10), src: await A.sourceCsv('imp_1') });
  const before = await snap();
  t.equal(await B.get('imp_1', 'import'), null);
  t.same(await B.list('import', { limit: 10 }), []);
  t.equal(await B.sourceCsv('imp_1'), null);
  t.equal(await B.status('imp_1'), null);
  t.equal(await B.start('imp_1'), null);
  t.equal(await B.cancel('imp_1'), null);
  t.equal(await B.checkpoint('imp_1', 5, { created: 1, updated: 0, unchanged: 0, rejected: 0, review: 0 }), false);
  await B.finish('imp_1', 'failed', { errorCode: 'job_failed' });
  t.same(await B.doneRows('imp_1', 0, 10), new Set());
  t.same(await B.rejections('imp_1', 10), []);
  t.equal(await B.takeResult('exp_1'), null, 'B cannot take A\'s export');
  t.same(await snap(), before, 'A is unchanged');
  t.ok(await A.takeResult('exp_1'), 'A downloads its export once');
  t.equal(await A.takeResult('exp_1'), null);
});
