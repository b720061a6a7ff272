// CPU cost per request by process kind, from /proc/<pid>/task/<tid>/stat (utime + stime per thread):
// HTTP event loops (each HTTP process's main thread), their crypto threads (named `svc-crypto` by
// workers/crypto.ts), every other thread of the HTTP processes (V8 GC helpers, libuv pool), the
// supervisor and any other svc process, Redis and Postgres. The load generator is not included.
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import { label } from './procstat.js';

const CLK_TCK = (() => {
  try { return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100; } catch { return 100; }
})();

export const KINDS = ['http', 'crypto', 'threads', 'email path', 'other svc', 'redis', 'postgres'] as const;
export type CpuKind = (typeof KINDS)[number];
/** CPU seconds per kind over a window. */
export type CpuByKind = Record<CpuKind, number>;

function ticksOf(statPath: string): number | undefined {
  try {
    const stat = fs.readFileSync(statPath, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(rest[11]) + Number(rest[12]);
  } catch { return undefined; }
}

function comm(pid: number, tid: number): string {
  try { return fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim(); } catch { return ''; }
}

/** Ticks per (pid, tid) with the kind each thread counts under. */
function snapshot(svcPids: number[], storagePids: number[]): Map<string, { kind: CpuKind; ticks: number }> {
  const out = new Map<string, { kind: CpuKind; ticks: number }>();
  const add = (pid: number, kindOf: (tid: number) => CpuKind) => {
    let tids: string[];
    try { tids = fs.readdirSync(`/proc/${pid}/task`); } catch { return; }
    for (const t of tids) {
      const tid = Number(t);
      const ticks = ticksOf(`/proc/${pid}/task/${tid}/stat`);
      if (ticks !== undefined) out.set(`${pid}/${tid}`, { kind: kindOf(tid), ticks });
    }
  };
  for (const pid of svcPids) {
    const l = label(pid);
    const http = /^http/.test(l);
    // The e-mail worker process (queue → SMTP) is the login's e-mail path, apart from its requests.
    const other: CpuKind = /email/.test(l) ? 'email path' : 'other svc';
    add(pid, (tid) => (!http ? other : tid === pid ? 'http' : comm(pid, tid) === 'svc-crypto' ? 'crypto' : 'threads'));
  }
  for (const pid of storagePids) {
    let cmd = '';
    try { cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8'); } catch { /* gone */ }
    add(pid, () => (/redis/.test(cmd) ? 'redis' : 'postgres'));
  }
  return out;
}

export function emptyByKind(): CpuByKind {
  return Object.fromEntries(KINDS.map((k) => [k, 0])) as CpuByKind;
}

/**
 * CPU seconds per kind between start() and stop(). Threads present at both reads count their delta;
 * threads born in between count everything they used (a new connection in Postgres, a restarted worker).
 */
export class CpuCost {
  private first = new Map<string, { kind: CpuKind; ticks: number }>();
  private t0 = 0;
  constructor(private readonly svc: () => number[], private readonly storage: () => number[]) {}
  start(): this { this.t0 = performance.now(); this.first = snapshot(this.svc(), this.storage()); return this; }
  stop(): { secs: number; cpu: CpuByKind } {
    const last = snapshot(this.svc(), this.storage());
    const cpu = emptyByKind();
    for (const [k, v] of last) cpu[v.kind] += (v.ticks - (this.first.get(k)?.ticks ?? 0)) / CLK_TCK;
    return { secs: (performance.now() - this.t0) / 1000, cpu };
  }
}

export interface CostPerRequest {
  /** Answers the CPU is divided by (correct answers; a shed or misclassified answer is not a request served). */
  requests: number;
  /** CPU microseconds per request per kind, and their sum. */
  us: CpuByKind;
  totalUs: number;
  /** Cores busy per kind (CPU seconds / wall seconds). */
  cores: CpuByKind;
}

export function costPerRequest(cpu: CpuByKind, secs: number, requests: number): CostPerRequest {
  const us = emptyByKind();
  const cores = emptyByKind();
  let total = 0;
  for (const k of KINDS) {
    us[k] = requests > 0 ? Math.round((cpu[k] / requests) * 1e7) / 10 : 0;
    cores[k] = secs > 0 ? Math.round((cpu[k] / secs) * 1000) / 1000 : 0;
    total += cpu[k];
  }
  return { requests, us, totalUs: requests > 0 ? Math.round((total / requests) * 1e7) / 10 : 0, cores };
}

/** Issue 22's guard: a step whose CPU per request exceeds `limit` × the saturated step's is flagged. */
export const WAKEUP_LIMIT = 1.5;
export function wakeupFlags(steps: Array<{ offered: number; totalUs: number }>, saturatedUs: number, limit = WAKEUP_LIMIT): Array<{ offered: number; ratio: number; flagged: boolean }> {
  return steps.map((s) => {
    const ratio = saturatedUs > 0 ? Math.round((s.totalUs / saturatedUs) * 100) / 100 : 0;
    return { offered: s.offered, ratio, flagged: saturatedUs > 0 && ratio > limit };
  });
}

/** Issue 35 item 4: svc's paced/saturated ratio may be at most this multiple of the bare server's, same run. */
export const FLOOR_LIMIT = 1.3;

/**
 * A scenario's CPU per request at a paced rate over its saturated figure, against the same ratio of the
 * bare server in the same run: the part of the low-load cost that is svc's, not the host's wake-ups.
 * Undefined when a figure is missing.
 */
export function againstFloor(svc: { pacedUs?: number; satUs?: number }, bare: { pacedUs?: number; satUs?: number }): { ratio: number; bareRatio: number; relative: number; met: boolean } | undefined {
  if (!svc.pacedUs || !svc.satUs || !bare.pacedUs || !bare.satUs) return undefined;
  const r2 = (x: number) => Math.round(x * 100) / 100;
  const ratio = svc.pacedUs / svc.satUs;
  const bareRatio = bare.pacedUs / bare.satUs;
  const relative = r2(ratio / bareRatio);
  return { ratio: r2(ratio), bareRatio: r2(bareRatio), relative, met: relative <= FLOOR_LIMIT };
}
