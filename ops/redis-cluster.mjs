#!/usr/bin/env node
// A local Redis Cluster from the system redis-server: 3 masters and 3 replicas (one each) on free ports,
// data in a temp dir. Used by `npm test` (the cluster pass), by tests that break a cluster (a private
// one each), and by hand:
//   node ops/redis-cluster.mjs                 start, print the URL, stop on Ctrl-C / SIGTERM
//   node ops/redis-cluster.mjs start           start detached; prints the URL, then the dir on a second line
//   node ops/redis-cluster.mjs stop <dir>      stop a detached cluster and remove its dir
//   node ops/redis-cluster.mjs list <dir>      one line per node: port, role (master, replica or down), pid
// Options: --masters N (3), --replicas N (1), --node-timeout MS (5000).
// Uses Node built-ins only. Every node has cluster-require-full-coverage off, so while one master is
// down (before its replica is promoted) only that master's slots are refused, not the whole cluster.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A free TCP port on loopback, distinct from those in `taken`. */
async function freePort(taken) {
  for (;;) {
    const port = await new Promise((resolve, reject) => {
      const s = net.createServer();
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
    });
    if (!taken.has(port)) { taken.add(port); return port; }
  }
}

function cli(port, ...args) {
  const r = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8', timeout: 5000 });
  return (r.stdout ?? '').trim();
}

async function waitFor(check, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    try { if (await check()) return; } catch { /* not yet */ }
    if (Date.now() > end) throw new Error(`redis cluster: ${what} not reached in ${ms} ms`);
    await sleep(100);
  }
}

/** Whether every node reports cluster_state:ok and all slots assigned. */
export function clusterOk(ports) {
  return ports.every((p) => { const info = cli(p, 'cluster', 'info'); return /cluster_state:ok/.test(info) && /cluster_slots_assigned:16384/.test(info); });
}

/** The role (master/slave, as ROLE says, or down) and pid of each node, from the pidfiles and ROLE; pid null when not running. */
export function describe(dir) {
  const state = JSON.parse(fs.readFileSync(path.join(dir, 'cluster.json'), 'utf8'));
  return state.ports.map((port) => {
    let pid = null;
    try { pid = Number(fs.readFileSync(path.join(dir, `${port}`, 'redis.pid'), 'utf8').trim()); } catch { /* stopped */ }
    // A SIGKILLed node leaves its pidfile behind.
    if (pid !== null && !alive(pid)) pid = null;
    const role = cli(port, 'role').split('\n')[0] || 'down';
    return { port, pid, role };
  });
}

function alive(pid) {
  try { process.kill(pid, 0); return true; } catch (err) { return err.code === 'EPERM'; }
}

/** The `list` command's lines: a header, then port, role (master, replica or down) and pid of each node. */
export function listLines(dir) {
  const rows = describe(dir).map((n) => [String(n.port), n.role === 'slave' ? 'replica' : n.role, n.pid === null ? '-' : String(n.pid)]);
  return [['port', 'role', 'pid'], ...rows].map(([port, role, pid]) => `${port.padEnd(6)} ${role.padEnd(8)} ${pid}`);
}

/**
 * Starts a cluster; resolves to { url, dir, ports, stop() }. The nodes are daemonized redis-servers
 * (their pids in <dir>/<port>/redis.pid), so `stop(dir)` works from another process too.
 */
export async function startCluster({ masters = 3, replicas = 1, nodeTimeoutMs = 5000, dir } = {}) {
  if (spawnSync('sh', ['-c', 'command -v redis-server && command -v redis-cli'], { stdio: 'ignore' }).status !== 0) {
    throw new Error('redis-server and redis-cli are needed (apt-get install redis-server)');
  }
  dir ??= fs.mkdtempSync(path.join(os.tmpdir(), 'svc-redis-cluster-'));
  const n = masters * (1 + replicas);
  const taken = new Set();
  const ports = [];
  try {
    for (let i = 0; i < n; i++) {
      const port = await freePort(taken);
      // The cluster bus gets a free port of its own (the default, port + 10000, may be out of range or taken).
      const busPort = await freePort(taken);
      const nodeDir = path.join(dir, String(port));
      fs.mkdirSync(nodeDir, { recursive: true });
      const r = spawnSync('redis-server', [
        '--port', String(port), '--bind', '127.0.0.1', '--daemonize', 'yes', '--dir', nodeDir,
        '--pidfile', path.join(nodeDir, 'redis.pid'), '--logfile', path.join(nodeDir, 'redis.log'),
        '--cluster-enabled', 'yes', '--cluster-config-file', path.join(nodeDir, 'nodes.conf'), '--cluster-port', String(busPort),
        '--cluster-node-timeout', String(nodeTimeoutMs), '--cluster-require-full-coverage', 'no',
        '--save', '', '--appendonly', 'no',
      ], { stdio: 'ignore' });
      if (r.status !== 0) throw new Error(`redis-server on ${port} did not start`);
      ports.push(port);
    }
    fs.writeFileSync(path.join(dir, 'cluster.json'), JSON.stringify({ ports }));
    await waitFor(() => ports.every((p) => cli(p, 'ping') === 'PONG'), 10_000, 'every node answering PING');
    const create = spawnSync('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', String(replicas), '--cluster-yes'], { encoding: 'utf8', timeout: 60_000 });
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
    await waitFor(() => clusterOk(ports), 30_000, 'cluster_state:ok on every node');
    // Every replica attached to its master (a failover needs one that is in sync).
    await waitFor(() => ports.filter((p) => /^slave/.test(cli(p, 'role'))).length === masters * replicas
      && ports.filter((p) => /^slave/.test(cli(p, 'role'))).every((p) => /master_link_status:up/.test(cli(p, 'info', 'replication'))), 30_000, 'replicas in sync');
  } catch (err) {
    stopCluster(dir);
    throw err;
  }
  const url = `redis+cluster://${ports.slice(0, masters).map((p) => `127.0.0.1:${p}`).join(',')}`;
  return { url, dir, ports, stop: () => stopCluster(dir) };
}

/** Stops every node of a cluster started here (SIGKILL: its data is disposable) and removes its dir. */
export function stopCluster(dir) {
  if (!fs.existsSync(dir)) return;
  for (const entry of fs.readdirSync(dir)) {
    const pidFile = path.join(dir, entry, 'redis.pid');
    try { process.kill(Number(fs.readFileSync(pidFile, 'utf8').trim()), 'SIGKILL'); } catch { /* already gone */ }
  }
  fs.rmSync(dir, { recursive: true, force: true });
}

const isMain = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const args = process.argv.slice(2);
  const opt = (name, def) => { const i = args.indexOf(name); return i >= 0 ? Number(args[i + 1]) : def; };
  const cmd = args[0] && !args[0].startsWith('--') ? args[0] : 'run';
  const options = { masters: opt('--masters', 3), replicas: opt('--replicas', 1), nodeTimeoutMs: opt('--node-timeout', 5000) };
  if (cmd === 'list') {
    if (!args[1] || !fs.existsSync(path.join(args[1], 'cluster.json'))) { console.error('usage: node ops/redis-cluster.mjs list <dir> (the dir printed by start)'); process.exit(2); }
    for (const line of listLines(args[1])) console.log(line);
  } else if (cmd === 'stop') {
    if (!args[1]) { console.error('usage: node ops/redis-cluster.mjs stop <dir>'); process.exit(2); }
    stopCluster(args[1]);
  } else if (cmd === 'start') {
    const c = await startCluster(options).catch((err) => { console.error(err.message); process.exit(1); });
    console.log(c.url);
    console.log(c.dir);
  } else if (cmd === 'run') {
    const c = await startCluster(options).catch((err) => { console.error(err.message); process.exit(1); });
    console.log(c.url);
    console.error(`[redis-cluster] ${c.ports.length} nodes in ${c.dir}; Ctrl-C stops them`);
    const stop = () => { c.stop(); process.exit(0); };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    setInterval(() => {}, 1 << 30);
  } else {
    console.error('usage: node ops/redis-cluster.mjs [start|stop <dir>|list <dir>] [--masters N] [--replicas N] [--node-timeout MS]');
    process.exit(2);
  }
}
