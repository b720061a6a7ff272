import assert from 'node:assert/strict';
import t from 'tap';
import { insertLogRecords } from '../../src/store/log-archive.js';
import { archiveQueries } from '../../src/cross-tenant/log-archive.js';
import { Store } from '../../src/store/index.js';
import { migrate } from '../../src/store/migrate.js';
import { tempDatabase } from '../helpers/db.js';
import { uniqueName } from '../helpers/env.js';
import { PiiVault } from '../../src/pii/vault.js';
import { loadConfig } from '../../src/config.js';

// What tenant A's log archive repository holds (registries and versions, destinations and credentials,
// chunks and their records, rewrap jobs), tenant B's cannot read, list, change or delete.
// A database of its own: the claim below serves every tenant of its database.
const db = await tempDatabase();
t.teardown(db.drop);
await migrate(db.sql);
const sql = db.sql;
const [tenantA, tenantB] = [uniqueName('logarch-a'), uniqueName('logarch-b')];
for (const id of [tenantA, tenantB]) await sql`insert into tenants (id, name) values (${id}, ${id})`;
const store = new Store(sql, PiiVault.fromConfig(loadConfig(), sql));
const a = store.forTenant(tenantA).logArchive;
const b = store.forTenant(tenantB).logArchive;

const reg = await a.ensureRegistry('lkr_a1', 'auth', 'data', () => Buffer.from('sealed-key'));
await a.insertDestination({ id: 'ldst_a1', scope: 'tenant', kind: 'filesystem', name: 'disk', config: {}, enabled: true });
await a.insertCredential({ destination_id: 'ldst_a1', version: 1, status: 'current', backend: 'encrypted_table', content_type: null, secret_enc: Buffer.from('x'), object_path: null });
await insertLogRecords(sql, [{ tenantId: tenantA, logType: 'auth', plane: 'data', lane: 'default', ts: Date.now(), body: { n: 1 } }], true);
await sql.begin((tx) => archiveQueries.claim(tx, 100, () => 'lch_a1'));
await sql`update log_chunks set status = 'committed', key_registry_id = ${reg.id}, key_version = 1, object_key = 'k.v1', object_dir = 'dest-ldst_a1', destination_id = 'ldst_a1'
  where tenant_id = ${tenantA} and id = 'lch_a1'`;
await a.insertDestination({ id: 'ldst_a2', scope: 'tenant', kind: 'http_sink', name: 'sink', config: { url: 'http://127.0.0.1:9/' }, enabled: true });
await a.queueDeliveries('lch_a1', 'k.v1', 1, ['ldst_a2']);
await sql`update log_key_versions set status = 'rewrap_required' where tenant_id = ${tenantA} and registry_id = ${reg.id}`;
assert.equal(await a.queueRewrap({ id: 'lrw_a1', batch_id: 'lrwb_a1', key_registry_id: reg.id, chunk_id: 'lch_a1', from_version: 1 }), true);
const snapshot = async () => ({
  reg: await a.registry(reg.id), versions: await a.versions(reg.id), dest: await a.destination('ldst_a1'), creds: await a.credentials('ldst_a1'),
  chunk: await a.chunk('lch_a1'), records: await a.chunkRecords('lch_a1'), job: await a.rewrapJob('lrw_a1'), deliveries: await a.deliveriesOf(['lch_a1']),
});
const before = await snapshot();

t.test('B cannot read or list A\'s archive', async (t) => {
  t.equal(await b.registry(reg.id), null);
  t.equal(await b.registryFor('auth', 'data'), null);
  t.same(await b.registries(), []);
  t.same(await b.versions(reg.id), []);
  t.equal(await b.version(reg.id, 1), null);
  t.equal(await b.destination('ldst_a1'), null);
  t.same(await b.destinations({ limit: 10 }), []);
  t.same(await b.activeDestinations(), []);
  t.same(await b.credentials('ldst_a1'), []);
  t.equal(await b.chunk('lch_a1'), null);
  t.same(await b.chunks({ limit: 10 }), []);
  t.same(await b.chunkRecords('lch_a1'), []);
  t.same(await b.rewrapCandidates(reg.id, undefined), []);
  t.equal(await b.rewrapJob('lrw_a1'), null);
  t.same(await b.rewrapBatch('lrwb_a1'), []);
  t.equal(await b.chunksUsing(reg.id, 1), 0);
  t.same([...(await b.chunkCountsByVersion(reg.id))], []);
  t.same(await b.chunksHeldBy('ldst_a1', 10), []);
  t.same(await b.deliveriesOf(['lch_a1']), []);
  t.equal((await a.deliveriesOf(['lch_a1'])).length, 1, 'A sees its own');
  // The worker's queries by destination are scoped by the destination's tenant (platform ones excepted).
  const as = (tenant_id: string, id: string, kind: 'filesystem' | 'http_sink') => ({ tenant_id, id, scope: 'tenant' as const, kind });
  t.equal(await archiveQueries.countHeldBy(sql, as(tenantB, 'ldst_a1', 'filesystem')), 0);
  t.equal(await archiveQueries.countHeldBy(sql, as(tenantA, 'ldst_a1', 'filesystem')), 1);
  t.equal((await archiveQueries.backlogs(sql, [as(tenantB, 'ldst_a2', 'http_sink')])).get('ldst_a2')!.pending, 0);
  t.equal((await archiveQueries.backlogs(sql, [as(tenantA, 'ldst_a2', 'http_sink')])).get('ldst_a2')!.pending, 1);
  t.equal(await archiveQueries.claimDelivery(sql, as(tenantB, 'ldst_a2', 'http_sink'), Date.now() + 1000, 1000), null);
});

t.test('B cannot change or delete A\'s archive', async (t) => {
  t.equal(await b.setVersionStatus(reg.id, 1, 'retired'), false);
  t.equal(await b.updateDestination('ldst_a1', { name: 'hijacked' }), null);
  await b.setHealth('ldst_a1', 'failing', 'x');
  await b.setCredential('ldst_a1', 1, { status: 'retired' });
  await b.setRewrapStatus('lrw_a1', 'failed', { error: 'x' });
  t.equal(await b.deleteDestination('ldst_a1'), false);
  t.equal(await b.swapRewrapped('lch_a1', { version: 1, objectKey: 'k.v1', dir: 'dest-ldst_a1' }, { version: 2, objectKey: 'k.v2', bytes: 1 }), false);
  await b.queueDeliveries('lch_a1', 'k.v9', 1, ['ldst_a2']).catch(() => {}); // B has no such chunk: refused by the foreign key
  // B's registry for the same (log_type, plane) is its own.
  const mine = await b.ensureRegistry('lkr_b1', 'auth', 'data', () => Buffer.from('b-key'));
  t.equal(mine.id, 'lkr_b1');
  t.same(await snapshot(), before, 'A unchanged');
  t.equal((await a.rewrapCandidates(reg.id, undefined)).length, 1);
});
