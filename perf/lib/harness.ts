import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { SCENARIOS } from '../scenarios/index.js';
import { Unavailable, type Scenario } from '../scenarios/types.js';
import { runBurst } from './burst.js';
import { capacityOf, runLadder, runOverload, runSoak, type LadderOpts } from './ladder.js';
import type { LoadGen } from './loadgen.js';
import type { Comparison, Report, ScenarioRun } from './report.js';
import type { Target } from './target.js';
import { ROOT, num, say, str, type Opts } from './util.js';

export function ladderOpts(s: Scenario, o: Opts): LadderOpts {
  const rates = str(o, 'rates')?.split(',').map(Number).filter((x) => x > 0);
  return {
    rates,
    start: num(o, 'start', s.start),
    factor: num(o, 'factor', s.factor),
    maxSteps: num(o, 'max-steps', 9),
    durationS: num(o, 'duration', 10),
    warmupS: num(o, 'warmup', 3),
    past: num(o, 'past', 1),
    connections: o.connections ? num(o, 'connections', 0) : undefined,
    maxConnections: num(o, 'max-connections', 1000),
    budgetS: num(o, 'budget-ms', 200) / 1000,
    timeoutS: num(o, 'timeout', 10),
    satP95Ms: num(o, 'sat-p95', 1000),
    pacing: o.pacing === 'burst' ? 'burst' : 'even',
  };
}

export interface MeasureFlags { overload: boolean; soak: boolean; rates?: number[] }

/** prepare → ladder → (overload at 2× capacity) → (soak at 70%), never throwing for an unready target. */
export async function measure(lg: LoadGen, t: Target, s: Scenario, o: Opts, f: MeasureFlags): Promise<ScenarioRun> {
  const run: ScenarioRun = { scenario: s.name, target: t.name, unit: s.unit, describe: s.describe, setting: t.setting, available: false, calibration: {}, notes: [], steps: [] };
  let prep;
  try {
    say(`${t.name} ${s.name}: preparing fixtures`);
    prep = await s.prepare(t, o);
  } catch (e) {
    run.unavailable = e instanceof Unavailable ? e.message : `prepare failed: ${(e as Error).message}`;
    say(`${t.name} ${s.name}: NOT MEASURED: ${run.unavailable}`);
    return run;
  }
  run.available = true;
  run.calibration = prep.calibration;
  run.notes = prep.notes;
  for (const [k, v] of Object.entries(prep.calibration)) say(`${t.name} ${s.name} calibration ${k}: ${v}`);
  const fixturesId = `${s.name}@${t.name}`;
  await lg.setFixtures(fixturesId, prep.fixtures);
  const lo = ladderOpts(s, o);
  run.steps = await runLadder(lg, t, s, fixturesId, lo, f.rates);
  run.capacity = capacityOf(run.steps);
  run.sloMs = s.sloMs;
  run.capacityAtSlo = capacityOf(run.steps, s.sloMs, s.unit === 'logins/s');
  say(`${t.name} ${s.name}: capacity ${run.capacity} ${s.unit}; within p95 <= ${s.sloMs} ms: ${run.capacityAtSlo} ${s.unit}`);
  if (f.overload && run.capacity > 0) run.overload = await runOverload(lg, t, s, fixturesId, run.capacity, lo);
  if (o.burst === true && run.capacity > 0) run.burst = await runBurst(lg, t, s, fixturesId, run.capacity, lo, num(o, 'burst-seconds', 10));
  if (f.soak) {
    const rate = o['soak-rate'] ? num(o, 'soak-rate', 0) : Math.round(run.capacity * 0.7);
    if (rate > 0) {
      run.soak = await runSoak(lg, t, s, fixturesId, rate, num(o, 'soak-seconds', 300), lo);
      say(`${t.name} ${s.name}: soak RSS ${run.soak.flat ? 'flat' : 'NOT flat'}: ${run.soak.rss.map((r) => `${r.label} ${r.firstMb}→${r.lastMb} MB (${r.growthPct}%)`).join(', ')}; errors ${run.soak.errors}, misclassified ${run.soak.misclassified}`);
    }
  }
  return run;
}

/** svc's `svcScenario` against the peer's `scenario`, step for step (svc's introspection-mix against the peer's introspection). */
export function compare(runs: ScenarioRun[], scenario: string, svcScenario = scenario): Comparison | undefined {
  const a = runs.find((r) => r.scenario === svcScenario && r.target === 'svc' && r.available);
  const b = runs.find((r) => r.scenario === scenario && r.target === 'oidc-provider' && r.available);
  if (!a && !b) return undefined;
  const offered = [...new Set([...(a?.steps ?? []), ...(b?.steps ?? [])].map((s) => s.offered))].sort((x, y) => x - y);
  const ratio = (x?: number, y?: number) => (x !== undefined && y ? Math.round((x / y) * 100) / 100 : undefined);
  return {
    scenario: svcScenario === scenario ? scenario : `${scenario} (svc: ${svcScenario})`,
    steps: offered.map((off) => {
      const sa = a?.steps.find((s) => s.offered === off);
      const sb = b?.steps.find((s) => s.offered === off);
      return { offered: off, svc: sa?.good, peer: sb?.good, ratio: ratio(sa?.good, sb?.good), svcP95: sa?.latencyServed.p95, peerP95: sb?.latencyServed.p95 };
    }),
    capacity: { svc: a?.capacity, peer: b?.capacity, ratio: ratio(a?.capacity, b?.capacity) },
  };
}

export function meta(command: string, options: Opts): Report['meta'] {
  const git = (args: string[]) => { try { return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim(); } catch { return ''; } };
  return {
    date: new Date().toISOString(),
    commit: git(['rev-parse', '--short', 'HEAD']) || 'unknown',
    dirty: git(['status', '--porcelain', '--untracked-files=no']).length > 0,
    node: process.version,
    nproc: os.availableParallelism(),
    cpu: os.cpus()[0]?.model ?? 'unknown',
    memGb: Math.round(os.totalmem() / 2 ** 30),
    command,
    options,
    loadavgStart: os.loadavg().map((x) => Math.round(x * 100) / 100),
    busyWarning: os.loadavg()[0]! > 1.5 ? `The machine was busy when the run started (1-min load average ${os.loadavg()[0]!.toFixed(2)} on ${os.availableParallelism()} cores): other processes competed for the CPU, figures are pessimistic.` : undefined,
    loadgen: `autocannon 8 (programmatic, overallRate${options.pacing === 'burst' ? ', stock per-second bursts' : ', requests evenly spaced per connection with random phase (perf/lib/pacing.ts)'}) in a separate child process on the same machine; login: open-loop driver (perf/lib/openloop.ts: evenly spaced login arrivals, node:http keep-alive agent, each login awaits its mailed code)`,
  };
}

export function scenarioByName(name: string): Scenario {
  const s = SCENARIOS[name];
  if (!s) throw new Error(`unknown scenario "${name}"; one of: ${[...Object.keys(SCENARIOS), 'peer', 'all'].join(', ')}`);
  return s;
}
