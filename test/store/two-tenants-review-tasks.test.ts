import t from 'tap';
import { Store } from '../../src/store/index.js';
import { migrate } from '../../src/store/migrate.js';
import { tempDatabase } from '../helpers/db.js';
import { uniqueName } from '../helpers/env.js';
import { PiiVault } from '../../src/pii/vault.js';
import { loadConfig } from '../../src/config.js';

// In the manner of Hydra's persister_nid_test: tenant B's review-task repository cannot read, list,
// transition or take over the Idempotency-Keys of A's tasks, and A's data is the same afterwards.
const db = await tempDatabase();
t.teardown(db.drop);
await migrate(db.sql);
const sql = db.sql;
const store = new Store(sql, PiiVault.fromConfig(loadConfig(), sql));
const [a, b] = [uniqueName('rvt-a'), uniqueName('rvt-b')];
for (const id of [a, b]) await sql`insert into tenants (id, name) values (${id}, ${id})`;
const A = store.forTenant(a).reviewTasks;
const B = store.forTenant(b).reviewTasks;

t.test('B cannot see or change A\'s review tasks', async (t) => {
  const task = (await A.insert({ taskType: 'import_warning', reasons: [{ code: 'required_missing', severity: 'warning', targetRef: 'name' }], jobId: 'job_1', rowIndex: 3, pendingChange: { email: 'a@example.com' } }))!;
  t.ok(task);
  t.ok(await A.rememberKey(task.id, 'k1', 'h', { id: task.id }));
  const snap = async () => ({ task: await A.get(task.id), list: await A.list({ limit: 10 }), count: await A.count('job_1'), key: await A.idempotent(task.id, 'k1') });
  const before = await snap();

  t.equal(await B.get(task.id), null);
  t.same(await B.list({ limit: 10 }), []);
  t.equal(await B.count('job_1'), 0);
  t.equal(await B.transition(task.id, 'approved', 'mallory', ['x'], true), null);
  t.equal(await B.idempotent(task.id, 'k1'), null);
  t.ok(await B.rememberKey(task.id, 'k1', 'other', { id: 'forged' }), 'B\'s key is its own row');
  const own = await B.insert({ taskType: 'import_warning', reasons: [], jobId: 'job_1', rowIndex: 3 });
  t.ok(own, 'the same job and row in another tenant is another task');
  t.same(await snap(), before, 'A is unchanged');
  t.equal(await A.insert({ taskType: 'import_warning', reasons: [], jobId: 'job_1', rowIndex: 3 }), null, 'one task per import row in a tenant');
});
