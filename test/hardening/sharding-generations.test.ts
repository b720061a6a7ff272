import t from 'tap';
import { startTestServer } from '../helpers/server.js';
import { adminToken, setupTenant } from '../helpers/tokens.js';
import { api } from '../admin/helpers.js';

// Issue 21 item 7: generations are numbered per scope, so a global reshard after a per-client
// override goes from N to N+1 (spec), and a client's own generations count on from there.
const srv = await startTestServer();
t.teardown(() => srv.close());
const boot = await setupTenant(srv, 'shard-gen');
const platform = api(srv, await adminToken(srv, { tenantId: boot.tenant_id, permissions: ['admin:*'], platform: true }));
const PATH = '/api/admin/settings/refresh-token-sharding';

t.test('global N -> N+1 after a per-client override; client generations follow their own sequence', async (t) => {
  const before = (await platform('GET', PATH)).body;
  const n = before.currentGeneration as number;
  const web = boot.clients.web.client_id;
  const c1 = await platform('PUT', PATH, { shardCount: 4, clientId: web });
  t.equal(c1.status, 200, JSON.stringify(c1.body));
  const cg1 = c1.body.config.currentGeneration;
  t.equal(cg1, n + 1, 'a first override follows the global generation it used');
  const c2 = await platform('PUT', PATH, { shardCount: 2, clientId: web });
  t.equal(c2.body.config.currentGeneration, cg1 + 1);
  const g = await platform('PUT', PATH, { shardCount: before.authCodeShardCount, skip_sync_check: true });
  t.equal(g.status, 200);
  t.equal(g.body.config.currentGeneration, n + 1, 'global: N -> N+1, not skipping the client generations');
  t.equal(g.body.config.previousGenerations[0].generation, n);
});
