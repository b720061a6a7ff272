import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

/** Clock ticks per second for /proc/<pid>/stat utime/stime (getconf CLK_TCK; 100 on Linux). */
const CLK_TCK = (() => {
  try { return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100; } catch { return 100; }
})();

interface Raw { ticks: number; rssKb: number }

function readStat(pid: number): Raw | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start after the last ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(rest[11]) + Number(rest[12]); // utime, stime (fields 14 and 15)
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(status);
    return { ticks, rssKb: m ? Number(m[1]) : 0 };
  } catch {
    return undefined;
  }
}

function ppidOf(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch { return undefined; }
}

/** The process and all its descendants (what `pgrep -P` gives, applied recursively), via /proc. */
export function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const pid = Number(d);
    const pp = ppidOf(pid);
    if (pp === undefined) continue;
    let arr = children.get(pp);
    if (!arr) children.set(pp, (arr = []));
    arr.push(pid);
  }
  const out: number[] = [];
  const stack = [root];
  while (stack.length && out.length < 512) {
    const p = stack.pop()!;
    if (!fs.existsSync(`/proc/${p}`)) continue;
    out.push(p);
    for (const c of children.get(p) ?? []) stack.push(c);
  }
  return out;
}

/** Pids listening on a TCP port (ss -ltnp), plus their parent when it is the svc supervisor. */
export function pidsListeningOn(port: number): number[] {
  let text = '';
  try { text = execFileSync('ss', ['-ltnpH', `sport = :${port}`], { encoding: 'utf8' }); } catch { return []; }
  const pids = new Set<number>();
  for (const m of text.matchAll(/pid=(\d+)/g)) pids.add(Number(m[1]));
  for (const p of [...pids]) {
    const pp = ppidOf(p);
    if (pp && pp > 1 && /cli\.js/.test(cmdline(pp))) pids.add(pp);
  }
  return [...pids];
}

export function cmdline(pid: number): string {
  try { return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim(); } catch { return ''; }
}

/** A short label: SVC_ROLE from the environment when present (http, webhook-worker...), else the command. */
export function label(pid: number): string {
  try {
    const env = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    const role = env.find((e) => e.startsWith('SVC_ROLE='))?.slice(9);
    const idx = env.find((e) => e.startsWith('SVC_WORKER_INDEX='))?.slice(17);
    if (role) return `${role}${idx !== undefined ? `#${idx}` : ''}`;
  } catch { /* not readable */ }
  const cmd = cmdline(pid);
  if (/cli\.js start/.test(cmd)) return 'supervisor';
  return cmd.split(' ').slice(0, 3).map((s) => s.split('/').pop()).join(' ').slice(0, 40);
}

export interface ProcFigures { pid: number; label: string; cpuPct: number; rssMbMax: number; rssMbMean: number }

/**
 * Samples CPU (utime+stime delta) and RSS of a set of processes over a window; the process list is
 * re-resolved at every sample so restarted workers are caught.
 */
export class ProcSampler {
  private first = new Map<number, { ticks: number; t: number }>();
  private last = new Map<number, { ticks: number; t: number }>();
  private rss = new Map<number, number[]>();
  private labels = new Map<number, string>();
  private timer?: NodeJS.Timeout;
  readonly rssSeries: Array<{ t: number; byPid: Record<number, number> }> = [];
  private t0 = Date.now();

  constructor(private readonly pids: () => number[], private readonly everyMs = 1000, private readonly keepSeries = false) {}

  start(): this {
    this.t0 = Date.now();
    this.sample();
    this.timer = setInterval(() => this.sample(), this.everyMs);
    this.timer.unref();
    return this;
  }

  private sample(): void {
    const now = Date.now();
    const byPid: Record<number, number> = {};
    for (const pid of this.pids()) {
      const r = readStat(pid);
      if (!r) continue;
      if (!this.first.has(pid)) { this.first.set(pid, { ticks: r.ticks, t: now }); this.labels.set(pid, label(pid)); }
      this.last.set(pid, { ticks: r.ticks, t: now });
      let arr = this.rss.get(pid);
      if (!arr) this.rss.set(pid, (arr = []));
      if (arr.length < 100_000) arr.push(r.rssKb / 1024);
      byPid[pid] = Math.round(r.rssKb / 102.4) / 10;
    }
    if (this.keepSeries && this.rssSeries.length < 100_000) this.rssSeries.push({ t: Math.round((now - this.t0) / 1000), byPid });
  }

  stop(): ProcFigures[] {
    clearInterval(this.timer);
    this.sample();
    const out: ProcFigures[] = [];
    for (const [pid, f] of this.first) {
      const l = this.last.get(pid)!;
      const secs = (l.t - f.t) / 1000;
      const rss = this.rss.get(pid) ?? [];
      out.push({
        pid,
        label: this.labels.get(pid) ?? String(pid),
        cpuPct: secs > 0 ? Math.round(((l.ticks - f.ticks) / CLK_TCK / secs) * 1000) / 10 : 0,
        rssMbMax: Math.round(Math.max(0, ...rss) * 10) / 10,
        rssMbMean: rss.length ? Math.round((rss.reduce((a, b) => a + b, 0) / rss.length) * 10) / 10 : 0,
      });
    }
    return out.sort((a, b) => a.pid - b.pid);
  }
}
