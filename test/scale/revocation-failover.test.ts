import { spawnSync } from 'node:child_process';
import t from 'tap';
import type { BootstrapResult } from '../../src/bootstrap.js';
import { failureBudgetKey } from '../../src/clients/authenticate.js';
import { redisKeys } from '../../src/store/redis-keys.js';
import { parseJti } from '../../src/tokens/jti.js';
import { j } from '../helpers/http.js';
import { claims } from '../helpers/jwt.js';
import { PrivateRedisCluster, waitFor } from '../helpers/processes.js';
import { startTestServer } from '../helpers/server.js';
import { postForm, setupTenant } from '../helpers/tokens.js';
import { isolatedDatabase } from '../webhooks/fixtures.js';

// Issue 29 items 14 and 15, on a private 3-master Redis Cluster whose masters are killed:
// - while a master is down and before its replica is promoted, only the tokens whose revocation keys it
//   holds are refused (503); one sentinel key for the whole record refused every tenant's tokens;
// - a revocation acknowledged just before its master dies is not lost in the failover.

const redisCli = (port: number, ...args: string[]) => spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8', timeout: 5000 }).stdout.trim();

// Three master failovers with their detection and promotion (node timeout 2 s): over the suite's 120 s on a loaded machine.
t.setTimeout(300_000);

// One cluster and server for both: the first kills one master, the second two others (each still with its replica).
const cluster = new PrivateRedisCluster();
await cluster.start({ nodeTimeoutMs: 2000 });
const db = await isolatedDatabase();
const srv = await startTestServer({ DATABASE_URL: db.url, REDIS_URL: cluster.url, QUEUE_REDIS_URL: cluster.url, REVOCATION_RETRY_MS: '60000' });
t.teardown(async () => { await srv.close(); await db.drop(); await cluster.destroy(); });
const originalMasters = cluster.nodes().filter((n) => /^master/.test(cluster.role(n.port))).map((n) => n.port);

const keyOf = (token: string) => {
  const jti = claims(token).jti as string;
  return srv.config.redisPrefix + redisKeys.revokedJti(parseJti(jti)!, jti);
};
const issue = async (b: BootstrapResult) =>
  (await j(await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' }))).access_token as string;
/** A token whose revocation key one of `masters` holds (or none of them, with `not`). */
async function tokenOn(b: BootstrapResult, master: number, not = false): Promise<string> {
  for (;;) {
    const token = await issue(b);
    if ((cluster.masterOf(keyOf(token)) === master) !== not) return token;
  }
}
const introspect = async (b: BootstrapResult, token: string) => {
  const r = await postForm(`${srv.url}/introspect`, b.clients.resource_server, { token });
  return { status: r.status, active: r.status === 200 ? (await j(r)).active as boolean : undefined };
};

t.test('a dead master refuses only the tokens whose revocation keys it holds', async (t) => {
  // The victim holds what the old single sentinel lived on, but neither the tenant's marks nor the
  // resource server's failure budget (those are read for every token of the tenant, whatever its shard).
  const oldSentinelMaster = cluster.masterOf(`${srv.config.redisPrefix}rv:loaded`);
  let b: BootstrapResult;
  for (;;) {
    b = await setupTenant(srv, 'rvfail');
    const holders = [redisKeys.tenantSuspended(b.tenant_id), failureBudgetKey(b.clients.resource_server.client_id, '127.0.0.1')].map((k) => cluster.masterOf(srv.config.redisPrefix + k));
    if (!holders.includes(oldSentinelMaster)) break;
  }
  const victim = oldSentinelMaster;
  const replica = cluster.replicaOf(victim);
  const elsewhere = await tokenOn(b, victim, true);
  const onVictim = await tokenOn(b, victim);
  t.same(await introspect(b, elsewhere), { status: 200, active: true });

  cluster.kill(victim);
  // Until the replica is promoted, the dead master's tokens are 503 and every other token answers.
  await waitFor(async () => (await introspect(b, onVictim)).status === 503, 10_000, 20);
  let answeredElsewhere = 0;
  while (!/^master/.test(cluster.role(replica))) {
    const other = await introspect(b, elsewhere);
    t.same(other, { status: 200, active: true }, 'a token whose keys live on another master is answered during the outage');
    answeredElsewhere++;
    if (answeredElsewhere > 400) break;
  }
  t.ok(answeredElsewhere > 0, `answered ${answeredElsewhere} introspections of the other token during the outage`);
  await waitFor(async () => (await introspect(b, onVictim)).status === 200, 15_000, 50);
  t.same(await introspect(b, onVictim), { status: 200, active: true }, 'the victim\'s token is answered again after the promotion');
});

t.test('a revocation acknowledged just before its master dies survives the failover', async (t) => {
  const b = await setupTenant(srv, 'rvwait');
  // The masters the first test left alive, each with its replica.
  const masters = originalMasters.filter((p) => /^master/.test(cluster.role(p)));
  t.equal(masters.length, 2);

  // With the replica healthy: the answer waits for it (WAIT), so the promoted replica has the revocation.
  const victim = masters[0]!;
  const token = await tokenOn(b, victim);
  t.equal((await postForm(`${srv.url}/revoke`, b.clients.exchanger, { token })).status, 200);
  const replica = cluster.replicaOf(victim);
  cluster.kill(victim);
  await waitFor(() => /^master/.test(cluster.role(replica)), 20_000, 100);
  await waitFor(async () => (await introspect(b, token)).status === 200, 15_000, 50);
  t.same(await introspect(b, token), { status: 200, active: false }, 'revoked on the promoted replica');

  // With the replication link cut and the replica stopped (it cannot reconnect), the revocation reaches
  // only the master: no replica acknowledges it, so it is not acknowledged (503, repeat it), though
  // stored in Postgres and on the master. The master dies and the stale replica is promoted: svc writes
  // the revocation again until it is there, so the token ends inactive, not active again.
  const victim2 = masters[1]!;
  const replica2 = cluster.replicaOf(victim2);
  const token2 = await tokenOn(b, victim2);
  t.same(await introspect(b, token2), { status: 200, active: true });
  const pid = cluster.nodes().find((n) => n.port === replica2)!.pid!;
  process.kill(pid, 'SIGSTOP');
  redisCli(victim2, 'client', 'kill', 'type', 'replica');
  const r = await postForm(`${srv.url}/revoke`, b.clients.exchanger, { token: token2 });
  t.equal(r.status, 503, 'a revocation no replica has is not acknowledged');
  t.equal(r.headers.get('retry-after'), '1');
  t.same(await introspect(b, token2), { status: 200, active: false }, 'inactive on the master meanwhile');
  cluster.kill(victim2);
  process.kill(pid, 'SIGCONT');
  await waitFor(() => /^master/.test(cluster.role(replica2)), 30_000, 100);
  await waitFor(async () => { const a = await introspect(b, token2); return a.status === 200 && a.active === false; }, 20_000, 50);
  t.pass('revoked on the promoted replica: svc wrote it again after the failover');
});
