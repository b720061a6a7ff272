#!/usr/bin/env node
// The two README commands. Uses only Node built-ins until dependencies are installed, so it runs
// on a fresh machine: install -> build -> storage (given, local, or private under .data/) -> migrate
// -> bootstrap -> serve (start) or run the tap suite (test).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { localIssuer } from './local-issuer.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = path.join(root, '.data');
const mode = process.argv[2] ?? 'start';
// --no-build: run against the current dist/ (used while several people edit the tree at once).
const noBuild = process.argv.includes('--no-build');
const extra = process.argv.slice(3).filter((a) => a !== '--no-build');
const say = (msg) => console.error(`[svc] ${msg}`);

function sh(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: root, ...opts });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (exit ${r.status})`);
  return r;
}
const have = (bin) => spawnSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' }).status === 0;

function ensureInstalled() {
  const marker = path.join(root, 'node_modules', '.package-lock.json');
  const lock = path.join(root, 'package-lock.json');
  if (fs.existsSync(marker) && (!fs.existsSync(lock) || fs.statSync(marker).mtimeMs >= fs.statSync(lock).mtimeMs)) return;
  say('installing npm dependencies');
  if (!fs.existsSync(lock)) { sh('npm', ['install', '--no-audit', '--no-fund']); return; }
  try {
    sh('npm', ['ci', '--no-audit', '--no-fund']);
  } catch {
    // npm ci refuses a lock that a registry mirror cannot fully satisfy (e.g. optional platform packages); install still can.
    say('npm ci failed; falling back to npm install');
    sh('npm', ['install', '--no-audit', '--no-fund']);
  }
}

function build() {
  if (noBuild) return;
  say('building');
  sh('npm', ['run', '--silent', 'build']);
}

let aptUpdated = false;
function aptInstall(pkgs) {
  if (process.getuid?.() !== 0) throw new Error(`missing ${pkgs.join(', ')}: install them (apt-get install ${pkgs.join(' ')}) or set DATABASE_URL/REDIS_URL`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  if (!aptUpdated) { sh('apt-get', ['update', '-qq'], { env }); aptUpdated = true; }
  say(`installing Debian packages: ${pkgs.join(' ')}`);
  sh('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...pkgs], { env });
}

function portOpen(port, host = '127.0.0.1', timeoutMs = 500) {
  return new Promise((resolve) => {
    const s = net.connect({ port, host });
    const done = (ok) => { s.destroy(); resolve(ok); };
    s.setTimeout(timeoutMs, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}
async function waitPort(port, ms = 20000) {
  const end = Date.now() + ms;
  while (Date.now() < end) { if (await portOpen(port)) return; await new Promise((r) => setTimeout(r, 100)); }
  throw new Error(`nothing listening on ${port} after ${ms} ms`);
}

function pgBinDir() {
  const base = '/usr/lib/postgresql';
  const find = () => fs.existsSync(base) ? fs.readdirSync(base).sort((a, b) => Number(b) - Number(a)).map((v) => path.join(base, v, 'bin')).find((d) => fs.existsSync(path.join(d, 'initdb'))) : undefined;
  let dir = find();
  if (!dir) { aptInstall(['postgresql']); dir = find(); }
  if (!dir) throw new Error('postgresql binaries not found after install');
  return dir;
}

/** A private Postgres under .data/pg on port 54329, run as the postgres system user (it refuses root). */
async function startPrivatePostgres() {
  const port = 54329;
  if (await portOpen(port)) return `postgres://postgres@127.0.0.1:${port}`;
  const bin = pgBinDir();
  const pgdata = path.join(dataDir, 'pg');
  const asRoot = process.getuid?.() === 0;
  const run = (cmd, args) => asRoot ? sh('runuser', ['-u', 'postgres', '--', cmd, ...args]) : sh(cmd, args);
  fs.mkdirSync(dataDir, { recursive: true });
  if (!fs.existsSync(path.join(pgdata, 'PG_VERSION'))) {
    say(`initialising a private Postgres in ${pgdata}`);
    fs.mkdirSync(pgdata, { recursive: true });
    if (asRoot) sh('chown', ['-R', 'postgres:postgres', pgdata]);
    run(path.join(bin, 'initdb'), ['-D', pgdata, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  }
  say(`starting a private Postgres on port ${port}`);
  run(path.join(bin, 'pg_ctl'), ['-D', pgdata, '-l', path.join(pgdata, 'server.log'), '-o', `-p ${port} -k ${pgdata} -c listen_addresses=127.0.0.1`, '-w', 'start']);
  return `postgres://postgres@127.0.0.1:${port}`;
}

/** A private redis-server under .data/<name>; queue Redis gets persistence and noeviction (BullMQ needs both). */
async function startPrivateRedis(name, port, persistent) {
  if (await portOpen(port)) return `redis://127.0.0.1:${port}`;
  if (!have('redis-server')) aptInstall(['redis-server']);
  const dir = path.join(dataDir, name);
  fs.mkdirSync(dir, { recursive: true });
  say(`starting a private Redis (${name}) on port ${port}`);
  const args = ['--daemonize', 'yes', '--bind', '127.0.0.1', '--port', String(port), '--dir', dir, '--logfile', path.join(dir, 'redis.log'), '--pidfile', path.join(dir, 'redis.pid')];
  if (persistent) args.push('--appendonly', 'yes', '--appendfsync', 'everysec', '--maxmemory-policy', 'noeviction', '--save', '');
  else args.push('--save', '', '--appendonly', 'no');
  sh('redis-server', args);
  await waitPort(port);
  return `redis://127.0.0.1:${port}`;
}

async function resolveStorage(dbName) {
  let base = process.env.DATABASE_URL;
  if (!base) {
    if (await portOpen(5432)) base = `postgres://postgres@127.0.0.1:5432/${dbName}`;
    else base = `${await startPrivatePostgres()}/${dbName}`;
  }
  let redis = process.env.REDIS_URL;
  if (!redis) redis = (await portOpen(6379)) ? 'redis://127.0.0.1:6379' : await startPrivateRedis('redis', 63790, false);
  return { DATABASE_URL: base, REDIS_URL: redis };
}

async function ensureDatabase(url) {
  const { default: postgres } = await import(path.join(root, 'node_modules', 'postgres', 'src', 'index.js'));
  const u = new URL(url);
  const name = decodeURIComponent(u.pathname.slice(1));
  const admin = new URL(url); admin.pathname = '/postgres';
  const sql = postgres(admin.toString(), { max: 1, onnotice: () => {}, connect_timeout: 5 });
  try {
    const [row] = await sql`select 1 as x from pg_database where datname = ${name}`;
    if (!row) { say(`creating database ${name}`); await sql.unsafe(`create database "${name.replace(/"/g, '""')}"`); }
  } catch (err) {
    if (!/already exists/.test(String(err.message))) throw err;
  } finally { await sql.end({ timeout: 2 }); }
}

function cli(args, env, opts = {}) {
  return spawnSync(process.execPath, [path.join(root, 'dist', 'src', 'cli.js'), ...args], { cwd: root, env, encoding: 'utf8', stdio: opts.capture ? ['ignore', 'pipe', 'inherit'] : 'inherit' });
}

async function start() {
  ensureInstalled(); build();
  const storage = await resolveStorage('svc');
  if (!process.env.DATABASE_URL) await ensureDatabase(storage.DATABASE_URL);
  const queueRedis = process.env.QUEUE_REDIS_URL ?? (process.env.REDIS_URL ? storage.REDIS_URL : await startPrivateRedis('queue-redis', 63791, true));
  // `svc start` alone defaults to production; this local runner asks for development explicitly and says so.
  const env = { ...process.env, ...storage, QUEUE_REDIS_URL: queueRedis, NODE_ENV: process.env.NODE_ENV || 'development' };
  const issuer = localIssuer(process.env);
  if (issuer) env.ISSUER = issuer;
  if (issuer && !process.env.ISSUER) say(`ISSUER=${issuer} (set by npm start: passkeys need a host name, not an IP address; the server listens on ${process.env.HOST ?? '127.0.0.1'})`);
  say(env.NODE_ENV === 'development'
    ? 'NODE_ENV=development (set explicitly by npm start): X-Debug error details and the development key are on; never expose this server'
    : `NODE_ENV=${env.NODE_ENV}`);
  // No SMTP_URL: a development mail sink on 2525 that prints each login code (see docs/login.md).
  if (!process.env.SMTP_URL) { const sink = spawn(process.execPath, [path.join(root, 'dist', 'src', 'mail', 'dev-sink.js'), '--port', '2525'], { cwd: root, stdio: 'inherit' }); process.on('exit', () => sink.kill()); env.SMTP_URL = 'smtp://127.0.0.1:2525'; }
  if (cli(['migrate'], env).status !== 0) throw new Error('migration failed');
  const boot = cli(['bootstrap', '--json'], env, { capture: true });
  if (boot.status !== 0) throw new Error('bootstrap failed');
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(path.join(dataDir, 'bootstrap.json'), boot.stdout, { mode: 0o600 });
  say(`bootstrap written to .data/bootstrap.json`);
  try { const b = JSON.parse(boot.stdout); say(`demo login: open ${b.issuer}/authorize?response_type=code&client_id=${b.clients.web.client_id}&redirect_uri=${encodeURIComponent(b.clients.web.redirect_uris[0])}&scope=openid%20email&state=demo`); } catch { /* bootstrap without the web client */ }
  const child = spawn(process.execPath, [path.join(root, 'dist', 'src', 'cli.js'), 'start'], { cwd: root, env, stdio: 'inherit' });
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 0 : 1)));
}

/**
 * The suite runs against a local Redis Cluster (3 masters, 3 replicas, ops/redis-cluster.mjs) unless
 * REDIS_URL is given or TEST_REDIS=single: a key that crosses slots fails the suite. Files that start
 * private redis-servers keep covering a single Redis. See docs/decisions.md (issue 20).
 */
async function testRedis(storage) {
  if (process.env.REDIS_URL || process.env.TEST_REDIS === 'single') return { url: storage.REDIS_URL, stop: () => {} };
  if (!have('redis-server')) aptInstall(['redis-server']);
  const { startCluster } = await import(path.join(root, 'ops', 'redis-cluster.mjs'));
  say('starting a local Redis Cluster (3 masters, 3 replicas) for the suite; TEST_REDIS=single runs it on one Redis');
  const c = await startCluster();
  say(`Redis Cluster: ${c.url}`);
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { c.stop(); process.exit(1); });
  return c;
}

// Heavy variants that only `npm run test:long` runs, to keep `npm test` within its time budget: the
// whole admin suite again with its reads on a streaming replica (about 5 minutes), and the console's
// screen-by-screen Chromium journeys (about 3 minutes; `npm test` keeps the console's own checks and
// the operator walk of issue 33, which crosses the same screens).
const LONG_ONLY = ['dist/test/ops/admin-suite-on-replica.test.js', 'dist/test/console/console-resources.test.js', 'dist/test/console/console-operations.test.js'];

/** Every compiled test file, relative to the root, in name order. */
function testFiles(dir = 'dist/test') {
  const out = [];
  for (const e of fs.readdirSync(path.join(root, dir), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...testFiles(rel));
    else if (e.name.endsWith('.test.js')) out.push(rel);
  }
  return out;
}

async function test() {
  ensureInstalled(); build();
  if (!fs.existsSync('/usr/bin/chromium')) { try { aptInstall(['chromium']); } catch (err) { say(`browser login test will be skipped: ${err.message}`); } }
  // promtool checks and unit-tests the alert rules; test/ops/prometheus-rules.test.ts starts a private Prometheus.
  if (!have('promtool') || !have('prometheus')) { try { aptInstall(['prometheus']); } catch (err) { say(`the alert rule tests will fail: ${err.message}`); } }
  const storage = await resolveStorage('svc_test');
  if (!process.env.DATABASE_URL) await ensureDatabase(storage.DATABASE_URL);
  const redis = await testRedis(storage);
  process.on('exit', () => redis.stop());
  storage.REDIS_URL = redis.url;
  // test:long: the heavier variants (more fuzz runs per operation, more records per crash test: TEST_LONG)
  // and the files only it runs, unless files are named.
  const long = mode === 'test:long';
  const env = { ...process.env, ...storage, QUEUE_REDIS_URL: process.env.QUEUE_REDIS_URL ?? storage.REDIS_URL, NODE_ENV: 'test', ...(long ? { FUZZ_RUNS: process.env.FUZZ_RUNS ?? '40', TEST_LONG: '1' } : {}) };
  if (cli(['migrate'], env).status !== 0) throw new Error('migration failed');
  const files = extra.length ? extra : long ? ['dist/test/hardening/fuzz-openapi.test.js', 'dist/test/logging/crash.test.js', 'dist/test/pii/lookup-rotation.test.js', ...LONG_ONLY] : testFiles().filter((f) => !LONG_ONLY.includes(f));
  const tap = path.join(root, 'node_modules', '.bin', 'tap');
  // Three files at a time on two cores: most files wait on child processes, browsers and workers as much
  // as they compute, so a third keeps both cores busier. TEST_JOBS overrides.
  const args = ['--disable-coverage', '--reporter=tap', `--timeout=${long ? 900 : 120}`, `--jobs=${process.env.TEST_JOBS ?? 3}`, ...files];
  const logFile = path.join(dataDir, extra.length ? `test-run-${process.pid}.tap` : 'last-test-run.tap');
  fs.mkdirSync(dataDir, { recursive: true });
  const log = fs.createWriteStream(logFile);
  const child = spawn(tap, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
  let summary = null;
  let buf = '';
  let inFailure = 0;
  // Print each file's verdict and the full text of failures; the whole TAP stream goes to .data/last-test-run.tap.
  child.stdout.on('data', (chunk) => {
    log.write(chunk);
    buf += chunk.toString('utf8');
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl); buf = buf.slice(nl + 1);
      const m = /^# \{ total: (\d+), pass: (\d+)(?:, fail: (\d+))?(?:, skip: (\d+))?(?:, todo: (\d+))?/.exec(line) ?? /^# \{ total: (\d+)(?:, pass: (\d+))?(?:, fail: (\d+))?/.exec(line);
      if (m) summary = { total: +m[1], pass: +(m[2] ?? 0), fail: +(m[3] ?? 0), skip: +(m[4] ?? 0) };
      // Failure blocks are printed from their 'not ok' line to the next test line at the same depth.
      const depth = /^(\s*)(not )?ok \d+/.exec(line);
      if (depth) inFailure = depth[2] !== undefined ? depth[1].length + 1 : (inFailure && depth[1].length + 1 < inFailure ? inFailure : 0);
      if (depth && depth[1].length === 0) { process.stdout.write(line + '\n'); continue; }
      if (inFailure) process.stdout.write(line + '\n');
    }
  });
  const code = await new Promise((resolve) => child.on('exit', (c) => resolve(c ?? 1)));
  log.end();
  if (!summary) summary = { total: 0, pass: 0, fail: code === 0 ? 0 : 1, skip: 0 };
  console.log(`full TAP output: ${path.relative(root, logFile)}`);
  console.log(`${summary.pass} passed, ${summary.fail} failed${summary.skip ? `, ${summary.skip} skipped` : ''}`);
  process.exit(code === 0 && summary.fail === 0 && summary.pass > 0 ? 0 : 1);
}

async function perf() {
  ensureInstalled(); build();
  // A database of its own: perf runs use their own key-encryption key and must not touch the dev data.
  const storage = await resolveStorage('svc_perf');
  if (!process.env.DATABASE_URL) await ensureDatabase(storage.DATABASE_URL);
  const env = { ...process.env, ...storage, NODE_ENV: 'production', KEY_ENCRYPTION_KEY: process.env.KEY_ENCRYPTION_KEY ?? '11'.repeat(32), ISSUER: process.env.ISSUER ?? 'https://svc.perf.local' };
  if (cli(['migrate'], env).status !== 0) throw new Error('migration failed');
  const script = path.join(root, 'dist', 'perf', mode === 'profile' ? 'profile.js' : 'run.js');
  const child = spawn(process.execPath, [script, ...extra], { cwd: root, env, stdio: 'inherit' });
  child.on('exit', (code) => process.exit(code ?? 1));
}

const modes = { start, test, 'test:long': test, perf, profile: perf };
if (!modes[mode]) { console.error(`usage: node ops/run.mjs ${Object.keys(modes).join('|')}`); process.exit(2); }
modes[mode]().catch((err) => { say(err.message); process.exit(1); });
