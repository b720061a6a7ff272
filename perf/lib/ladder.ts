import type { Scenario } from '../scenarios/types.js';
import type { LoadGen } from './loadgen.js';
import { CpuCost, costPerRequest, type CostPerRequest } from './cpucost.js';
import { ProcSampler, type ProcFigures } from './procstat.js';
import { storagePids, type Target } from './target.js';
import { say, sleep, type Pcts } from './util.js';

export interface LadderOpts {
  rates?: number[];
  start: number;
  factor: number;
  maxSteps: number;
  durationS: number;
  warmupS: number;
  /** Steps run after the first saturated one. */
  past: number;
  connections?: number;
  maxConnections: number;
  /** Latency budget used to size connections: offered req/s x budget (autocannon connections are closed-loop). */
  budgetS: number;
  timeoutS: number;
  satP95Ms: number;
  pacing: 'even' | 'burst';
}

export interface Step {
  /** saturated: a closed loop with no rate (each connection sends its next request on the answer). */
  kind: 'step' | 'overload' | 'soak' | 'warmup' | 'saturated';
  /** Offered and achieved in the scenario's unit (req/s, or logins/s for login). */
  offered: number;
  achieved: number;
  /** Correct answers per second (2xx and the expected 4xx), in the scenario's unit. */
  good: number;
  offeredReqs: number;
  achievedReqs: number;
  connections: number;
  durationS: number;
  latency: Pcts;
  latency2xx: Pcts;
  /** Everything but the 503 sheds: what accepted requests saw. */
  latencyServed: Pcts;
  latencyShed: Pcts;
  /** Login: per-login latency (5 requests). */
  flows?: Pcts;
  flowsFailed?: Record<string, number>;
  statuses: Record<string, number>;
  non2xx: Record<string, number>;
  errors: number;
  timeouts: number;
  checked: number;
  shed: number;
  shedPct: number;
  misclassified: Record<string, number>;
  misclassifiedTotal: number;
  kinds: Record<string, number>;
  notes: Record<string, number>;
  procs: ProcFigures[];
  /** Postgres (all backends) and Redis CPU/RSS during the step, when they run on this machine. */
  storage: Array<{ label: string; cpuPct: number; rssMb: number }>;
  serverCpuPct: number;
  serverRssMb: number;
  loadgenCpuPct: number;
  /** CPU per correct answer by process kind (svc threads, Redis, Postgres; load generator excluded). */
  cost?: CostPerRequest;
  saturated: boolean;
  why: string;
}

export function connectionsFor(offeredReqs: number, o: LadderOpts, budgetS = o.budgetS, max = o.maxConnections): number {
  if (o.connections) return o.connections;
  return Math.max(8, Math.min(max, Math.ceil(offeredReqs * budgetS)));
}

/** One fixed-rate step: autocannon in the load process, /proc sampling of the server's processes here. */
export async function runStep(lg: LoadGen, t: Target, s: Scenario, fixturesId: string, offered: number, o: LadderOpts,
  kind: Step['kind'] = 'step', conns?: number, durationS = o.durationS): Promise<Step> {
  // offered 0: closed loop at full speed (kind 'saturated'), `conns` connections.
  const closed = offered === 0;
  const offeredReqs = closed ? 0 : Math.max(1, Math.round(offered * s.reqsPerUnit));
  const connections = conns ?? connectionsFor(offeredReqs, o);
  const sampler = new ProcSampler(() => t.pids(), 1000).start();
  const storageSampler = t.name === 'svc' ? new ProcSampler(storagePids, 2000).start() : undefined;
  const coster = new CpuCost(() => t.pids(), t.name === 'svc' ? storagePids : () => []).start();
  const raw = await lg.run({ scenario: s.name, fixturesId, url: t.url, rate: offeredReqs, durationS, connections, timeoutS: o.timeoutS, pacing: o.pacing });
  const used = coster.stop();
  const procs = sampler.stop();
  const storage: Step['storage'] = [];
  for (const p of storageSampler?.stop() ?? []) {
    const label = /redis/.test(p.label) ? 'redis' : 'postgres';
    let g = storage.find((x) => x.label === label);
    if (!g) storage.push((g = { label, cpuPct: 0, rssMb: 0 }));
    g.cpuPct = Math.round((g.cpuPct + p.cpuPct) * 10) / 10;
    g.rssMb = Math.round((g.rssMb + p.rssMbMax) * 10) / 10;
  }
  const secs = raw.elapsedS;
  const achievedReqs = raw.responses / secs;
  const non2xx: Record<string, number> = {};
  for (const [k, v] of Object.entries(raw.statuses)) if (!k.startsWith('2')) non2xx[k] = v;
  const shedPct = raw.responses ? (raw.shed / raw.responses) * 100 : 0;
  const r1 = (x: number) => Math.round(x * 10) / 10;
  const unitAchieved = s.unit === 'logins/s' ? raw.flowsDone / secs : achievedReqs;
  const good = s.unit === 'logins/s' ? raw.flowsDone / secs : raw.correct / secs;
  const failPct = raw.responses ? ((raw.errors + raw.timeouts) / Math.max(1, raw.responses + raw.errors)) * 100 : 100;
  const why: string[] = [];
  if (closed) { /* a closed loop offers what it achieves */ } else if (achievedReqs < 0.9 * offeredReqs) why.push(`achieved ${Math.round(achievedReqs)} < 90% of ${offeredReqs} req/s`);
  // Login: a failed login sends fewer requests, but the unit is whole logins.
  else if (s.unit === 'logins/s' && unitAchieved < 0.9 * offered) why.push(`${r1(unitAchieved)} logins/s < 90% of ${offered}`);
  if (shedPct > 1) why.push(`${r1(shedPct)}% shed (503)`);
  if (failPct > 1) why.push(`${r1(failPct)}% socket errors/timeouts`);
  if (raw.latencyServed.p95 > o.satP95Ms) why.push(`p95 ${raw.latencyServed.p95} ms > ${o.satP95Ms} ms`);
  if (s.unit === 'logins/s') {
    // A login waits on the e-mail path too: its own p95 and failures saturate the step, not only requests'.
    const failed = Object.values(raw.flowsFailed).reduce((a, b) => a + b, 0);
    const failPctLogins = (failed / Math.max(1, failed + raw.flowsDone)) * 100;
    if (failPctLogins > 1) why.push(`${r1(failPctLogins)}% of logins failed`);
    if ((raw.flows?.p95 ?? 0) > o.satP95Ms) why.push(`login p95 ${raw.flows!.p95} ms > ${o.satP95Ms} ms`);
  }
  const step: Step = {
    kind, offered, achieved: r1(unitAchieved), good: r1(good), offeredReqs, achievedReqs: r1(achievedReqs), connections, durationS: r1(secs),
    latency: raw.latency, latency2xx: raw.latency2xx, latencyServed: raw.latencyServed, latencyShed: raw.latencyShed,
    flows: raw.flows, flowsFailed: s.unit === 'logins/s' ? raw.flowsFailed : undefined,
    statuses: raw.statuses, non2xx, errors: raw.errors, timeouts: raw.timeouts,
    checked: raw.checked, shed: raw.shed, shedPct: r1(shedPct),
    misclassified: raw.misclassified, misclassifiedTotal: raw.misclassifiedTotal, kinds: raw.kinds, notes: raw.notes,
    procs, storage, serverCpuPct: r1(procs.reduce((a, p) => a + p.cpuPct, 0)), serverRssMb: r1(procs.reduce((a, p) => a + p.rssMbMax, 0)),
    loadgenCpuPct: raw.loadgenCpuPct, cost: costPerRequest(used.cpu, used.secs, raw.correct), saturated: why.length > 0, why: why.join('; '),
  };
  const fails = step.flowsFailed && Object.keys(step.flowsFailed).length ? `, failed logins ${JSON.stringify(step.flowsFailed)}` : '';
  const perStep = Object.keys(step.notes).filter((k) => /^\d .* p95 ms$/.test(k)).map((k) => `${k.slice(0, -7)} ${step.notes[k]}`).join(', ');
  const mail = step.notes['mail wait p95 ms'] !== undefined ? `, mail wait p50/p95 ${step.notes['mail wait p50 ms']}/${step.notes['mail wait p95 ms']} ms${perStep ? `, step p95 ms: ${perStep}` : ''}` : '';
  const lat = s.unit === 'logins/s' ? `login p50/p95/p99 ${step.flows?.p50 ?? '-'}/${step.flows?.p95 ?? '-'}/${step.flows?.p99 ?? '-'} ms, req p95 ${step.latencyServed.p95} ms${mail}${fails}` : `p50 ${step.latencyServed.p50} p95 ${step.latencyServed.p95} p99 ${step.latencyServed.p99} max ${step.latencyServed.max} ms`;
  say(`${t.name} ${s.name} ${kind} ${offered} ${s.unit}: achieved ${step.achieved} (${step.good} good), ${lat}, ` +
    `non-2xx ${JSON.stringify(non2xx)}, misclassified ${step.misclassifiedTotal}, shed ${step.shed}, CPU/req ${step.cost?.totalUs ?? '-'} µs (${step.cost ? Object.entries(step.cost.us).filter(([, v]) => v > 0).map(([k, v]) => `${k} ${v}`).join(', ') : ''}), server CPU ${step.serverCpuPct}% RSS ${step.serverRssMb} MB, loadgen CPU ${step.loadgenCpuPct}%${storage.length ? `, ${storage.map((g) => `${g.label} CPU ${g.cpuPct}%`).join(', ')}` : ''}${step.saturated ? ` [saturated: ${step.why}]` : ''}`);
  return step;
}

export function ladderRates(o: LadderOpts): number[] {
  if (o.rates?.length) return o.rates;
  const out: number[] = [];
  let r = o.start;
  for (let i = 0; i < o.maxSteps; i++) { out.push(Math.round(r)); r *= o.factor; }
  return out;
}

/** Fixed-rate steps up the ladder until saturation, then `past` steps beyond it. */
export async function runLadder(lg: LoadGen, t: Target, s: Scenario, fixturesId: string, o: LadderOpts, rates = ladderRates(o)): Promise<Step[]> {
  if (o.warmupS > 0) {
    say(`${t.name} ${s.name}: warm-up ${o.warmupS} s at ${rates[0]} ${s.unit} (not reported)`);
    await runStep(lg, t, s, fixturesId, rates[0]!, o, 'warmup', undefined, o.warmupS);
  }
  const steps: Step[] = [];
  let beyond = -1;
  for (const r of rates) {
    await sleep(1000);
    const st = await runStep(lg, t, s, fixturesId, r, o);
    steps.push(st);
    if (beyond >= 0) beyond++;
    else if (st.saturated) beyond = 0;
    if (beyond >= o.past) break;
  }
  return steps;
}

/** Highest rate of correct answers among unsaturated steps (else the highest seen at all). */
export function capacityOf(steps: Step[], sloMs?: number, login = false): number {
  const within = (s: Step) => sloMs === undefined || ((login ? s.flows?.p95 : s.latencyServed.p95) ?? Infinity) <= sloMs;
  const ok = steps.filter((s) => s.kind === 'step' && !s.saturated && within(s));
  if (sloMs !== undefined) return Math.max(0, ...ok.map((s) => s.good));
  const pool = ok.length ? ok : steps.filter((s) => s.kind === 'step');
  return Math.max(0, ...pool.map((s) => s.good));
}

/** Twice capacity; connections sized for a 500 ms budget so the generator itself can offer it. */
export async function runOverload(lg: LoadGen, t: Target, s: Scenario, fixturesId: string, capacity: number, o: LadderOpts): Promise<Step> {
  const offered = Math.max(1, Math.round(capacity * 2));
  await sleep(1000);
  return runStep(lg, t, s, fixturesId, offered, o, 'overload', connectionsFor(offered * s.reqsPerUnit, o, 0.5, Math.max(o.maxConnections, 2000)));
}

export interface Soak {
  rate: number;
  seconds: number;
  segments: Step[];
  rss: Array<{ pid: number; label: string; firstMb: number; lastMb: number; minMb: number; maxMb: number; growthPct: number; flat: boolean }>;
  rssSeries: Array<{ t: number; byPid: Record<number, number> }>;
  errors: number;
  misclassified: number;
  flat: boolean;
}

/**
 * `seconds` at `rate`, run as back-to-back segments so latency over time is visible, RSS of every
 * server process sampled every 5 s. Flat: mean RSS of the last minute within 10% of the first minute
 * after a 30 s settle.
 */
export async function runSoak(lg: LoadGen, t: Target, s: Scenario, fixturesId: string, rate: number, seconds: number, o: LadderOpts): Promise<Soak> {
  const segS = Math.min(30, seconds);
  const n = Math.max(1, Math.ceil(seconds / segS));
  const sampler = new ProcSampler(() => t.pids(), 5000, true).start();
  const segments: Step[] = [];
  say(`${t.name} ${s.name}: soak ${seconds} s at ${rate} ${s.unit} (${n} segments of ${segS} s)`);
  for (let i = 0; i < n; i++) segments.push(await runStep(lg, t, s, fixturesId, rate, o, 'soak', undefined, Math.min(segS, seconds - i * segS)));
  sampler.stop();
  const series = sampler.rssSeries;
  const pids = new Set<number>();
  for (const p of series) for (const k of Object.keys(p.byPid)) pids.add(Number(k));
  const procs = segments[0]?.procs ?? [];
  const rss = [...pids].map((pid) => {
    const pts = series.filter((p) => p.byPid[pid] !== undefined).map((p) => ({ t: p.t, mb: p.byPid[pid]! }));
    const settle = pts.filter((p) => p.t >= 30);
    const use = settle.length >= 4 ? settle : pts;
    const span = Math.min(60, Math.max(5, (use.at(-1)?.t ?? 0) - (use[0]?.t ?? 0)) / 3);
    const mean = (arr: typeof pts) => (arr.length ? arr.reduce((a, p) => a + p.mb, 0) / arr.length : 0);
    const first = mean(use.filter((p) => p.t <= (use[0]?.t ?? 0) + span));
    const last = mean(use.filter((p) => p.t >= (use.at(-1)?.t ?? 0) - span));
    const growthPct = first ? Math.round(((last - first) / first) * 1000) / 10 : 0;
    return {
      pid, label: procs.find((p) => p.pid === pid)?.label ?? String(pid),
      firstMb: Math.round(first * 10) / 10, lastMb: Math.round(last * 10) / 10,
      minMb: Math.min(...pts.map((p) => p.mb)), maxMb: Math.max(...pts.map((p) => p.mb)),
      growthPct, flat: Math.abs(growthPct) <= 10,
    };
  });
  const errors = segments.reduce((a, x) => a + x.errors + x.timeouts + Object.entries(x.non2xx).filter(([k]) => k === '500' || k === '503').reduce((b, [, v]) => b + v, 0), 0);
  const misclassified = segments.reduce((a, x) => a + x.misclassifiedTotal, 0);
  return { rate, seconds, segments, rss, rssSeries: series, errors, misclassified, flat: rss.every((r) => r.flat) };
}
