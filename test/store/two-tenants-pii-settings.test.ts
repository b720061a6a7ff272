import t from 'tap';
import { twoTenants } from '../helpers/two-tenants.js';

// Tenant A's PII partition settings and counts cannot be read or changed through tenant B's repository.
const { A, B } = await twoTenants('pii-settings');

const rules = [{ attribute: 'residence', operator: 'in' as const, value: ['de', 'fr'], partition: 'default', priority: 1, enabled: true }];
await A.piiSettings.put({ policy_partition: 'default', use_residence: false, rules });
await A.users.insert({ email: 'counted@example.com' });

t.test("B sees its own defaults, not A's settings or counts", async (t) => {
  t.match(await B.piiSettings.get(), { policy_partition: null, use_residence: true, rules: [], updated_at: null });
  t.same([...(await B.piiSettings.activeCounts())], []);
  t.match(await A.piiSettings.get(), { policy_partition: 'default', use_residence: false, rules });
  t.same([...(await A.piiSettings.activeCounts())], [['default', 1]]);
});

t.test("B's write changes only B", async (t) => {
  await B.piiSettings.put({ policy_partition: null, use_residence: true, rules: [] });
  t.match(await A.piiSettings.get(), { policy_partition: 'default', use_residence: false, rules }, "A's settings unchanged");
});
