#!/usr/bin/env node
// Runs test files (default: the admin suite, dist/test/admin/*.test.js) with admin reads on a Postgres
// streaming replica: a private primary (initdb, wal_level=replica) and a replica made by
// `pg_basebackup -R`, each on a free port in a temp dir, from the system binaries; both are removed after.
// Usage (after npm run build): node ops/replica-suite.mjs [dist/test/...test.js ...]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const base = '/usr/lib/postgresql';
const bin = fs.existsSync(base) ? fs.readdirSync(base).sort((a, b) => Number(b) - Number(a)).map((v) => path.join(base, v, 'bin')).find((d) => fs.existsSync(path.join(d, 'initdb'))) ?? '' : '';
const asRoot = process.getuid?.() === 0;

function run(cmd, args, opts = {}) {
  const full = bin && !cmd.includes('/') && fs.existsSync(path.join(bin, cmd)) ? path.join(bin, cmd) : cmd;
  const r = asRoot && opts.asPostgres ? spawnSync('runuser', ['-u', 'postgres', '--', full, ...args], { encoding: 'utf8' }) : spawnSync(full, args, { encoding: 'utf8', ...opts });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr || r.stdout}`);
  return r;
}
const freePort = () => new Promise((resolve) => { const s = net.createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); }); });

const dirs = [];
async function start(make) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-pg-'));
  dirs.push(dir);
  if (asRoot) run('chown', ['postgres:postgres', dir]);
  const port = await freePort();
  make(path.join(dir, 'data'));
  run('pg_ctl', ['-D', path.join(dir, 'data'), '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c wal_level=replica -c max_wal_senders=5 -c hot_standby=on -c fsync=off`,
    '-l', path.join(dir, 'log'), '-w', '-t', '60', 'start'], { asPostgres: true });
  return { dir, port };
}
function stopAll() {
  for (const dir of dirs.reverse()) {
    try { run('pg_ctl', ['-D', path.join(dir, 'data'), '-m', 'immediate', '-w', 'stop'], { asPostgres: true }); } catch { /* not running */ }
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The environment without a surrounding tap run's own settings (this script may run inside a test file). */
function outerEnv() {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^_?TAP/i.test(k)));
  if (/tapjs|processinfo/.test(env.NODE_OPTIONS ?? '')) delete env.NODE_OPTIONS;
  return env;
}

let code = 1;
try {
  const primary = await start((data) => run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8'], { asPostgres: true }));
  run('psql', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-c', 'create database svc']);
  const DATABASE_URL = `postgres://postgres@127.0.0.1:${primary.port}/svc`;
  run(process.execPath, ['dist/src/cli.js', 'migrate'], { cwd: root, env: { ...process.env, DATABASE_URL } });
  const replica = await start((data) => run('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', data, '-R', '-X', 'stream', '--checkpoint=fast'], { asPostgres: true }));
  const DATABASE_READ_URL = `postgres://postgres@127.0.0.1:${replica.port}/svc`;
  const files = process.argv.slice(2).length ? process.argv.slice(2)
    : fs.readdirSync(path.join(root, 'dist/test/admin')).filter((f) => f.endsWith('.test.js')).map((f) => `dist/test/admin/${f}`);
  console.error(`[replica-suite] primary :${primary.port}, replica :${replica.port}; ${files.length} files`);
  const r = spawnSync(path.join(root, 'node_modules/.bin/tap'), ['--disable-coverage', '--reporter=terse', '--timeout=180', '--jobs=1', ...files],
    { cwd: root, stdio: 'inherit', env: { ...outerEnv(), NODE_ENV: 'test', DATABASE_URL, DATABASE_READ_URL } });
  code = r.status ?? 1;
  // Proof that reads went there: transactions the replica itself served in the svc database.
  const served = run('psql', ['-h', '127.0.0.1', '-p', String(replica.port), '-U', 'postgres', '-tAc', "select xact_commit + xact_rollback from pg_stat_database where datname = 'svc'"]).stdout.trim();
  console.error(`[replica-suite] the replica served ${served} transactions in the svc database`);
} finally {
  stopAll();
}
process.exit(code);
