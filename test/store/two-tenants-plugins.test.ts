import t from 'tap';
import { Store } from '../../src/store/index.js';
import { migrate } from '../../src/store/migrate.js';
import { tempDatabase } from '../helpers/db.js';
import { uniqueName } from '../helpers/env.js';
import { PiiVault } from '../../src/pii/vault.js';
import { loadConfig } from '../../src/config.js';

// Plugin settings are per tenant: B's repository cannot read A's settings or sealed secrets, and B
// disabling or configuring a plugin leaves A's plugin as it was.
const db = await tempDatabase();
t.teardown(db.drop);
await migrate(db.sql);
const store = new Store(db.sql, PiiVault.fromConfig(loadConfig(), db.sql));
const [a, b] = [uniqueName('plg-a'), uniqueName('plg-b')];
for (const id of [a, b]) await db.sql`insert into tenants (id, name) values (${id}, ${id})`;
const A = store.forTenant(a).plugins;
const B = store.forTenant(b).plugins;

t.test('B cannot see or change A\'s plugin settings', async (t) => {
  await A.setConfig('smtp-mailer', { from_name: 'A' }, { enc: Buffer.from('sealed-a'), names: ['relay_password'] });
  await A.setEnabled('webhook-sender', false);
  const snap = async () => ({ m: await A.get('smtp-mailer'), w: await A.get('webhook-sender'), list: await A.list(), on: await A.enabled('webhook-sender'), off: await A.disabled() });
  const before = await snap();
  t.equal(await B.get('smtp-mailer'), null);
  t.same(await B.list(), []);
  t.equal(await B.enabled('webhook-sender'), true, 'A\'s switch does not reach B');
  t.same(await B.disabled(), []);
  await B.setEnabled('smtp-mailer', false);
  await B.setConfig('smtp-mailer', { from_name: 'B' }, { enc: null, names: [] });
  await B.setEnabled('webhook-sender', true);
  t.same(await snap(), before, 'A is unchanged');
  t.equal(await A.enabled('smtp-mailer'), true);
  t.equal(await B.enabled('smtp-mailer'), false);
  t.same(await A.disabled(), ['webhook-sender'], 'the switches the per-process cache loads are the tenant\'s own');
  t.same(await B.disabled(), ['smtp-mailer']);
});
