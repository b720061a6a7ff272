import { spawnSync } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import { PrivateRedisCluster, waitFor } from '../helpers/processes.js';

// Issue 29 item 16 (part): `node ops/redis-cluster.mjs list <dir>` prints each node of a cluster it
// started with its port, role and pid, so an operator can tell which process to stop.
const script = path.resolve('ops/redis-cluster.mjs');
const cluster = new PrivateRedisCluster();
t.teardown(() => cluster.destroy());
await cluster.start({ masters: 3, replicas: 1 });

const list = () => {
  const r = spawnSync(process.execPath, [script, 'list', cluster.dir], { encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stderr: r.stderr, rows: r.stdout.trim().split('\n').map((l) => l.trim().split(/\s+/)) };
};
const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };

t.test('list prints every node with its port, role and pid', async (t) => {
  const r = list();
  t.equal(r.status, 0, r.stderr);
  t.same(r.rows[0], ['port', 'role', 'pid'], 'a header');
  const nodes = r.rows.slice(1);
  t.same(nodes.map((n) => Number(n[0])).sort(), [...cluster.ports].sort(), 'one line per node');
  t.equal(nodes.filter((n) => n[1] === 'master').length, 3);
  t.equal(nodes.filter((n) => n[1] === 'replica').length, 3);
  for (const [port, role, pid] of nodes) {
    t.ok(alive(Number(pid)), `node ${port} has a running pid`);
    t.match(spawnSync('redis-cli', ['-p', port!, 'role'], { encoding: 'utf8' }).stdout, role === 'master' ? /^master/ : /^slave/, `node ${port} is a ${role}`);
  }
});

t.test('a stopped node is listed as down, without a pid', async (t) => {
  const replica = list().rows.slice(1).find((n) => n[1] === 'replica')!;
  cluster.kill(Number(replica[0]));
  await waitFor(() => !alive(Number(replica[2])), 10_000, 50);
  t.same(list().rows.find((n) => n[0] === replica[0]), [replica[0], 'down', '-']);
});

t.test('list without a cluster directory is a usage error', async (t) => {
  const r = spawnSync(process.execPath, [script, 'list', '/nonexistent'], { encoding: 'utf8' });
  t.equal(r.status, 2);
  t.match(r.stderr, /usage: node ops\/redis-cluster.mjs list <dir>/);
});
