import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './env.js';

/** A private redis-server on a free port with its data in a temp dir, for tests that stop or break Redis. */
export class PrivateRedis {
  private proc: ChildProcess | undefined;
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-redis-'));
  port = 0;

  get url(): string { return `redis://127.0.0.1:${this.port}`; }

  async start(): Promise<void> {
    if (!this.port) this.port = await freePort();
    this.proc = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir], { stdio: 'ignore' });
    await waitFor(async () => spawnSync('redis-cli', ['-p', String(this.port), 'ping'], { encoding: 'utf8' }).stdout.trim() === 'PONG');
  }

  async stop(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null) return;
    await new Promise<void>((resolve) => { p.once('exit', () => resolve()); p.kill('SIGKILL'); });
    this.proc = undefined;
  }

  async destroy(): Promise<void> {
    await this.stop();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * Forks a worker script (its stdio ignored) and resolves once it reports `svc:ready`; rejects if it exits
 * first. The child is in `children` until it exits, so a teardown can SIGKILL whatever is left.
 */
export function forkReady(file: string, env: NodeJS.ProcessEnv, children: Set<ChildProcess>): Promise<ChildProcess> {
  const child = fork(file, [], { env, stdio: 'ignore' });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return new Promise((resolve, reject) => {
    child.once('message', (m: { type?: string }) => (m?.type === 'svc:ready' ? resolve(child) : reject(new Error('unexpected message'))));
    child.once('exit', (code) => reject(new Error(`worker exited early (${code})`)));
  });
}

export async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs = 10_000, stepMs = 50): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try { if (await check()) return; } catch { /* not yet */ }
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/** The newest system Postgres binaries directory (`/usr/lib/postgresql/<version>/bin`), or PATH. */
export function postgresBin(): string {
  const base = '/usr/lib/postgresql';
  const found = fs.existsSync(base) ? fs.readdirSync(base).sort((a, b) => Number(b) - Number(a)).map((v) => path.join(base, v, 'bin')).find((d) => fs.existsSync(path.join(d, 'initdb'))) : undefined;
  return found ?? '';
}

/** The command line of a Postgres binary, under runuser as the `postgres` user when we are root (Postgres refuses to run as root). */
function pgCommand(bin: string, args: string[]): [string, string[]] {
  const cmd = path.join(postgresBin(), bin);
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
}

/** Runs a Postgres binary and waits for it (blocks the event loop: setup only). */
function pgRun(bin: string, args: string[]): string {
  const r = spawnSync(...pgCommand(bin, args), { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${bin} ${args.join(' ')} failed: ${r.stderr || r.stdout}`);
  return r.stdout;
}

/**
 * Runs a Postgres binary without blocking the event loop: pg_ctl start/stop while an in-process server
 * under test keeps serving (a test that restarts Postgres under traffic).
 */
function pgRunAsync(bin: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(...pgCommand(bin, args), { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout!.on('data', (d) => { out += d; });
    p.stderr!.on('data', (d) => { out += d; });
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${bin} ${args.join(' ')} failed: ${out}`))));
  });
}

/**
 * A private Postgres on a free port with its data in a temp dir: a primary (initdb, wal_level=replica) or
 * a streaming replica of one (`pg_basebackup -R`), started and stopped with pg_ctl.
 */
export class PrivatePostgres {
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-pg-'));
  port = 0;

  private constructor() {
    if (process.getuid?.() === 0) spawnSync('chown', ['postgres:postgres', this.dir]);
  }

  url(db = 'postgres'): string { return `postgres://postgres@127.0.0.1:${this.port}/${db}`; }

  /** A new primary that accepts replication connections from loopback. */
  static async primary(): Promise<PrivatePostgres> {
    const pg = new PrivatePostgres();
    pgRun('initdb', ['-D', pg.data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
    await pg.start();
    return pg;
  }

  /** A hot standby streaming from `primary`, made by pg_basebackup. */
  static async replicaOf(primary: PrivatePostgres): Promise<PrivatePostgres> {
    const pg = new PrivatePostgres();
    pgRun('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', pg.data, '-R', '-X', 'stream', '--checkpoint=fast']);
    await pg.start();
    return pg;
  }

  private get data(): string { return path.join(this.dir, 'data'); }

  /** Starts the server (again, after stop(): the same port and data directory). */
  async start(): Promise<void> {
    if (!this.port) this.port = await freePort();
    const opts = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c wal_level=replica -c max_wal_senders=5 -c hot_standby=on -c fsync=off -c full_page_writes=off`;
    await pgRunAsync('pg_ctl', ['-D', this.data, '-o', opts, '-l', path.join(this.dir, 'log'), '-w', '-t', '60', 'start']);
  }

  /**
   * Stops the server and waits until it is gone. `immediate` (the default) is a crash as far as the
   * data is concerned (recovery at the next start); `fast` is an orderly restart: sessions are terminated
   * (FATAL 57P01 to every client) and the server checkpoints and exits.
   */
  async stop(mode: 'immediate' | 'fast' = 'immediate'): Promise<void> {
    if (fs.existsSync(path.join(this.data, 'postmaster.pid'))) await pgRunAsync('pg_ctl', ['-D', this.data, '-m', mode, '-w', '-t', '60', 'stop']);
  }

  async destroy(): Promise<void> {
    await this.stop().catch(() => undefined);
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** What ops/redis-cluster.mjs exports (plain JS, loaded at run time). */
interface ClusterScript {
  startCluster(o: { masters?: number; replicas?: number; nodeTimeoutMs?: number }): Promise<{ url: string; dir: string; ports: number[]; stop(): void }>;
  describe(dir: string): Array<{ port: number; pid: number | null; role: string }>;
}

/**
 * A private Redis Cluster (3 masters, 3 replicas by default) on free ports in a temp dir, started by
 * ops/redis-cluster.mjs, for tests that break a cluster. Stopped by destroy().
 */
export class PrivateRedisCluster {
  url = '';
  dir = '';
  ports: number[] = [];
  private script: ClusterScript | undefined;

  async start(opts: { masters?: number; replicas?: number; nodeTimeoutMs?: number } = {}): Promise<void> {
    const file = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../../ops/redis-cluster.mjs');
    this.script = (await import(file)) as ClusterScript;
    const c = await this.script.startCluster(opts);
    Object.assign(this, { url: c.url, dir: c.dir, ports: c.ports });
  }

  /** Each node's port, pid and role (master, slave, or down). */
  nodes(): Array<{ port: number; pid: number | null; role: string }> {
    return this.script!.describe(this.dir);
  }

  /** The master serving a key (as stored, keyPrefix included), from CLUSTER KEYSLOT and CLUSTER SLOTS. */
  masterOf(key: string): number {
    const port = this.ports.find((p) => /^master/.test(spawnSync('redis-cli', ['-p', String(p), 'role'], { encoding: 'utf8' }).stdout))!;
    const slot = Number(spawnSync('redis-cli', ['-p', String(port), 'cluster', 'keyslot', key], { encoding: 'utf8' }).stdout.trim());
    const lines = spawnSync('redis-cli', ['-p', String(port), 'cluster', 'nodes'], { encoding: 'utf8' }).stdout.trim().split('\n');
    for (const l of lines) {
      const f = l.split(' ');
      if (!/master/.test(f[2]!) || /fail/.test(f[2]!)) continue;
      for (const range of f.slice(8)) {
        const [a, b] = range.split('-').map(Number);
        if (slot >= a! && slot <= (b ?? a)!) return Number(f[1]!.split(':')[1]!.split('@')[0]);
      }
    }
    throw new Error(`no master serves slot ${slot}`);
  }

  /** The replica of a master (by port), from CLUSTER NODES. */
  replicaOf(masterPort: number): number {
    const lines = spawnSync('redis-cli', ['-p', String(masterPort), 'cluster', 'nodes'], { encoding: 'utf8' }).stdout.trim().split('\n');
    const id = lines.find((l) => l.split(' ')[1]!.startsWith(`127.0.0.1:${masterPort}@`))!.split(' ')[0];
    const r = lines.find((l) => l.split(' ')[3] === id);
    if (!r) throw new Error(`master ${masterPort} has no replica`);
    return Number(r.split(' ')[1]!.split(':')[1]!.split('@')[0]);
  }

  /** SIGKILLs one node (its pid from its pidfile). */
  kill(port: number): void {
    const n = this.nodes().find((x) => x.port === port);
    if (n?.pid) process.kill(n.pid, 'SIGKILL');
  }

  role(port: number): string {
    return spawnSync('redis-cli', ['-p', String(port), 'role'], { encoding: 'utf8', timeout: 2000 }).stdout.split('\n')[0] || 'down';
  }

  async destroy(): Promise<void> {
    if (!this.dir) return;
    const dir = this.dir;
    this.dir = '';
    for (const n of this.script!.describe(dir)) if (n.pid) { try { process.kill(n.pid, 'SIGKILL'); } catch { /* gone */ } }
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
