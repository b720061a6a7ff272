import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createSql } from '../../src/sql.js';
import { descendants, pidsListeningOn } from './procstat.js';
export { storagePids };
import { RESULTS_DIR, ROOT, freePort, http, say, sleep } from './util.js';

export interface Bootstrap {
  issuer: string;
  tenant_id: string;
  admin_access_token?: string;
  clients: {
    web: { client_id: string; client_secret: string; redirect_uris: string[] };
    exchanger: { client_id: string; client_secret: string; audience: string };
    resource_server: { client_id: string; client_secret: string; audience: string };
  };
}

/** What a scenario drives: svc (started here or given by --url) or the peer (node-oidc-provider). */
export interface Target {
  name: 'svc' | 'oidc-provider' | 'bare';
  url: string;
  /** Server processes whose CPU and RSS are sampled (re-resolved at each sample). */
  pids(): number[];
  bootstrap?: Bootstrap;
  peer?: PeerInfo;
  /** How it was run, for the report. */
  setting: string;
  stop(): Promise<void>;
}

export interface PeerInfo {
  tokenPath: string;
  introspectPath: string;
  revokePath: string;
  cc: { client_id: string; client_secret: string };
  short: { client_id: string; client_secret: string };
  rs: Array<{ client_id: string; client_secret: string }>;
  scope: string;
}

const CLI = path.join(ROOT, 'dist', 'src', 'cli.js');

/** Runs `node dist/src/cli.js <args>` with the harness's environment; returns stdout, throws on failure. */
export function svcCli(args: string[], env: NodeJS.ProcessEnv = process.env, timeoutMs = 60_000): string {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: ROOT, env, encoding: 'utf8', timeout: timeoutMs, maxBuffer: 16 << 20 });
  if (r.status !== 0) {
    const err = (r.stderr || r.stdout || '').trim().split('\n').slice(-5).join(' | ');
    throw new Error(`svc ${args.slice(0, 2).join(' ')} failed (exit ${r.status ?? r.signal}): ${err}`);
  }
  return r.stdout;
}

/** The JSON object printed by a CLI command (the last {...} block of stdout, in case logs precede it). */
export function cliJson(args: string[], env?: NodeJS.ProcessEnv): any {
  const out = svcCli(args, env);
  const start = out.indexOf('{');
  if (start < 0) throw new Error(`svc ${args.join(' ')} printed no JSON`);
  return JSON.parse(out.slice(start));
}

export async function waitReady(url: string, ms: number, alive: () => boolean = () => true): Promise<void> {
  const end = Date.now() + ms;
  let last = '';
  while (Date.now() < end) {
    if (!alive()) throw new Error('server exited before it became ready');
    try {
      const r = await http(`${url}/readyz`, { timeoutMs: 2000 });
      if (r.status === 200) return;
      last = `${r.status} ${r.text.slice(0, 200)}`;
    } catch (e) { last = (e as Error).message; }
    await sleep(200);
  }
  throw new Error(`${url}/readyz not 200 after ${ms} ms (last: ${last})`);
}

function checkBootstrap(b: any): Bootstrap {
  const c = b?.clients;
  if (!c?.exchanger?.client_id || !c?.resource_server?.client_id || !c?.web?.client_id) {
    throw new Error('bootstrap JSON lacks clients.{web,exchanger,resource_server} (is the tokens/login work in yet?)');
  }
  return b as Bootstrap;
}

export interface StartOpts {
  workers: number;
  queueWorkers: boolean;
  smtpPort?: number;
  maxInflight?: number;
  env?: Record<string, string>;
  /** Profile: run a single HTTP process (SVC_ROLE=http, no supervisor) under `clinic <tool>`. */
  clinic?: { tool: string; dest: string };
}

export interface StartedSvc extends Target { logFile: string; child: ChildProcess; clinicOut?: () => string }

/**
 * The perf database outlives runs (each login run adds thousands of users and outbox events), and a
 * Postgres without autovacuum (this machine's runs with it off) never cleans or re-plans it: login cost
 * 1.5 ms of Postgres per login and 84 logins/s at most after a day of runs, 0.49 ms and 190/s after one
 * VACUUM ANALYZE (perf/RESULTS.md run 61). So every run starts from clean tables and fresh statistics.
 */
async function vacuumAnalyze(url: string | undefined): Promise<void> {
  if (!url) return;
  const sql = createSql({ databaseUrl: url, databasePoolSize: 1 });
  try {
    const [row] = await sql<Array<{ on: string }>>`select current_setting('autovacuum') as on`;
    if (row?.on !== 'on') say('note: autovacuum is off on this Postgres; the harness runs VACUUM ANALYZE before the run');
    await sql.unsafe('vacuum analyze');
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * Starts svc as an operator would: migrate, bootstrap --json, then `start` on a free loopback port,
 * and waits for /readyz. stop() sends SIGTERM (the supervisor drains), then SIGKILL after 15 s.
 */
export async function startSvc(o: StartOpts): Promise<StartedSvc> {
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    WORKERS: String(o.workers),
    PORT: String(port),
    HOST: '127.0.0.1',
    QUEUE_WORKERS: String(o.queueWorkers),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    // Prepared tokens must outlive a full run plus a soak.
    ACCESS_TOKEN_TTL_SECONDS: process.env.ACCESS_TOKEN_TTL_SECONDS ?? '7200',
    // All load comes from one address: the per-IP one-time-code limit (300/min) would cap login at 5/s.
    LOGIN_IP_LIMIT_PER_MINUTE: process.env.LOGIN_IP_LIMIT_PER_MINUTE ?? '10000000',
    ...(o.smtpPort ? { SMTP_URL: `smtp://127.0.0.1:${o.smtpPort}` } : {}),
    ...(o.maxInflight ? { MAX_INFLIGHT: String(o.maxInflight) } : {}),
    ...o.env,
  };
  say('svc migrate');
  svcCli(['migrate'], env);
  await vacuumAnalyze(env.DATABASE_URL);
  say('svc bootstrap --json');
  let bootstrap: Bootstrap | undefined;
  let bootErr: Error | undefined;
  try { bootstrap = checkBootstrap(cliJson(['bootstrap', '--json'], env)); } catch (e) { bootErr = e as Error; }

  const logFile = path.join(RESULTS_DIR, `svc-${port}.log`);
  const log = fs.openSync(logFile, 'w');
  let child: ChildProcess;
  let clinicText = '';
  if (o.clinic) {
    const bin = path.join(ROOT, 'node_modules', '.bin', 'clinic');
    env.SVC_ROLE = 'http';
    env.WORKERS = '1';
    env.NO_UPDATE_NOTIFIER = '1';
    env.NO_INSIGHT = '1'; // no usage-statistics prompt (it makes clinic exit silently without a TTY) and no telemetry
    // detached: its own process group, so the stop signal reaches clinic and the profiled process like a Ctrl-C.
    child = spawn(bin, [o.clinic.tool, '--open=false', `--dest=${o.clinic.dest}`, '--', process.execPath, '--import', pathToFileURL(path.join(ROOT, 'dist', 'perf', 'clinic-preload.js')).href, CLI, 'start'],
      { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const tee = (b: Buffer) => { clinicText += b.toString(); fs.writeSync(log, b); };
    child.stdout!.on('data', tee);
    child.stderr!.on('data', tee);
  } else {
    // PERF_NODE_ARGS: node flags for svc's processes (cluster workers inherit them), e.g. `--cpu-prof --cpu-prof-dir=DIR`.
    const nodeArgs = process.env.PERF_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
    child = spawn(process.execPath, [...nodeArgs, CLI, 'start'], { cwd: ROOT, env, stdio: ['ignore', log, log] });
  }
  let exited = false;
  child.on('exit', () => { exited = true; });
  const url = `http://127.0.0.1:${port}`;
  const pids = () => (exited || !child.pid ? [] : descendants(child.pid).filter((p) => !o.clinic || p !== child.pid));
  const stop = async () => {
    if (exited || !child.pid) return;
    say(`stopping svc (pid ${child.pid})`);
    // Under clinic: signal only the profiled process (it drains and exits); clinic sees it exit and
    // writes its report. Signalling clinic too (a terminal Ctrl-C) can truncate the last sample.
    if (o.clinic) { for (const p of pids()) { try { process.kill(p, 'SIGINT'); } catch { /* gone */ } } } else child.kill('SIGTERM');
    // clinic analyses its data after the process stops: give it minutes, not seconds.
    const end = Date.now() + (o.clinic ? 300_000 : 15_000);
    while (!exited && Date.now() < end) await sleep(100);
    if (!exited) { say('svc did not stop in time; SIGKILL'); try { o.clinic ? process.kill(-child.pid, 'SIGKILL') : child.kill('SIGKILL'); } catch { /* gone */ } }
    fs.closeSync(log);
  };
  try {
    await waitReady(url, o.clinic ? 60_000 : 30_000, () => !exited);
  } catch (e) {
    await stop();
    const tail = fs.readFileSync(logFile, 'utf8').split('\n').slice(-15).join('\n');
    throw new Error(`${(e as Error).message}\n--- ${logFile} (tail) ---\n${tail}`);
  }
  if (!bootstrap) {
    say(`warning: ${bootErr?.message}; scenarios that need its clients will be reported unavailable`);
  }
  say(`svc ready at ${url} (${o.clinic ? `single HTTP process under clinic ${o.clinic.tool}` : `WORKERS=${o.workers}`}, log ${path.relative(ROOT, logFile)})`);
  return {
    name: 'svc', url, pids, bootstrap: bootstrap!, logFile, child, stop,
    setting: o.clinic ? `single HTTP process (SVC_ROLE=http) under clinic ${o.clinic.tool}` : `cluster, WORKERS=${o.workers}, QUEUE_WORKERS=${o.queueWorkers}, NODE_ENV=${env.NODE_ENV ?? 'development'}, MAX_INFLIGHT=${env.MAX_INFLIGHT ?? 'default'}`,
    clinicOut: () => clinicText,
  };
}

/** A running svc given by --url (and --bootstrap file); pids from --pid or from who listens on the port. */
export function attachSvc(url: string, bootstrapFile: string | undefined, pid?: number): Target {
  const file = bootstrapFile ?? path.join(ROOT, '.data', 'bootstrap.json');
  let bootstrap: Bootstrap | undefined;
  try { bootstrap = checkBootstrap(JSON.parse(fs.readFileSync(file, 'utf8'))); } catch (e) { say(`warning: ${file}: ${(e as Error).message}`); }
  const port = Number(new URL(url).port || 80);
  return {
    name: 'svc', url: url.replace(/\/+$/, ''), bootstrap: bootstrap!,
    pids: () => (pid ? descendants(pid) : pidsListeningOn(port)),
    setting: `running server at ${url} (not started by the harness)`,
    stop: async () => {},
  };
}

/** Postgres (postmaster and its backends) and Redis serving this run, from DATABASE_URL / REDIS_URL ports. */
function storagePids(): number[] {
  const out: number[] = [];
  for (const [v, def] of [[process.env.DATABASE_URL, 5432], [process.env.REDIS_URL, 6379]] as const) {
    let port: number = def;
    try { if (v) port = Number(new URL(v).port) || def; } catch { /* default */ }
    for (const p of pidsListeningOn(port)) out.push(...descendants(p));
  }
  return [...new Set(out)];
}
