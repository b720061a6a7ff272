// `npm run perf -- cpu`: issue 22's fixed moderate rates against the saturated closed loop, same run.
// Per scenario: a warm-up, evenly paced steps (500, 1,000, 2,000 req/s by default), then a closed loop
// at full speed (`--sat-connections`, 64); CPU µs per correct answer per process kind for each, and a
// flag on every paced step costing more than 1.5 × the saturated step per request; then the same steps
// against bare uWS servers (the floor), and each scenario's paced/saturated ratio against the floor's.
import { SCENARIOS, VARIANTS } from '../scenarios/index.js';
import { startBare } from './bare.js';
import type { Scenario } from '../scenarios/types.js';
import { Unavailable } from '../scenarios/types.js';
import { againstFloor, FLOOR_LIMIT, WAKEUP_LIMIT, wakeupFlags } from './cpucost.js';
import { ladderOpts } from './harness.js';
import { runStep, type Step } from './ladder.js';
import type { LoadGen } from './loadgen.js';
import type { ScenarioRun } from './report.js';
import type { Target } from './target.js';
import { num, say, sleep, str, type Opts } from './util.js';

export const CPU_SCENARIOS: Record<string, () => Scenario> = {
  'introspection-hit': () => VARIANTS['introspection-hit']!,
  'introspection-miss': () => VARIANTS['introspection-miss']!,
  'token-exchange': () => SCENARIOS['token-exchange']!,
  'client-credentials': () => SCENARIOS['client-credentials']!,
  'client-credentials-dpop': () => VARIANTS['client-credentials-dpop']!,
  'introspection-hit-jwt': () => VARIANTS['introspection-hit-jwt']!,
  'introspection-hit-dpop': () => VARIANTS['introspection-hit-dpop']!,
  'exchange-bearer': () => VARIANTS['exchange-bearer']!,
  'exchange-dpop': () => VARIANTS['exchange-dpop']!,
  'introspection-miss-dpop': () => VARIANTS['introspection-miss-dpop']!,
};

export async function runCpu(lg: LoadGen, t: Target, o: Opts): Promise<ScenarioRun[]> {
  const names = str(o, 'only')?.split(',') ?? Object.keys(CPU_SCENARIOS);
  const rates = str(o, 'rates')?.split(',').map(Number).filter((x) => x > 0) ?? [500, 1000, 2000];
  const satConns = str(o, 'sat-connections')?.split(',').map(Number).filter((x) => x > 0) ?? [64];
  const runs: ScenarioRun[] = [];
  for (const name of names) {
    const make = CPU_SCENARIOS[name];
    if (!make) throw new Error(`cpu: unknown scenario ${name}; one of ${Object.keys(CPU_SCENARIOS).join(', ')}`);
    runs.push(await measureCpu(lg, t, make(), o, rates, satConns));
  }
  // The floor, same rates and connections: bare uWS servers, as many as svc's HTTP processes (--no-floor skips it).
  if (o.floor !== false) {
    const b = await startBare(num(o, 'workers', 2));
    let floor: ScenarioRun;
    try { floor = await measureCpu(lg, b, VARIANTS.bare!, o, rates, satConns); } finally { await b.stop(); }
    runs.push(floor);
    const rate = rates.includes(1000) ? 1000 : rates[0]!;
    for (const r of runs) {
      if (r === floor || !r.cpu) continue;
      const f = againstFloor(figures(r, rate), figures(floor, rate));
      if (!f) continue;
      r.cpu.floor = { rate, ...f, limit: FLOOR_LIMIT };
      say(`cpu ${r.scenario.slice(4)}: ${rate} req/s ÷ saturated = ${f.ratio}× (bare server ${f.bareRatio}×): ${f.relative}× the floor's ratio — ${f.met ? 'within' : 'OVER'} ${FLOOR_LIMIT}×`);
    }
  }
  return runs;
}

/** CPU per request of a run at a paced rate and saturated. */
function figures(r: ScenarioRun, rate: number): { pacedUs?: number; satUs?: number } {
  return { pacedUs: r.steps.find((x) => x.kind === 'step' && x.offered === rate)?.cost?.totalUs, satUs: r.cpu?.saturatedUs };
}

async function measureCpu(lg: LoadGen, t: Target, s: Scenario, o: Opts, rates: number[], satConns: number[]): Promise<ScenarioRun> {
  const run: ScenarioRun = { scenario: `cpu ${s.name}`, target: t.name, unit: s.unit, describe: s.describe, setting: t.setting, available: false, calibration: {}, notes: [], steps: [] };
  let prep;
  try { say(`cpu ${s.name}: preparing fixtures`); prep = await s.prepare(t, o); } catch (e) {
    run.unavailable = e instanceof Unavailable ? e.message : `prepare failed: ${(e as Error).message}`;
    say(`cpu ${s.name}: NOT MEASURED: ${run.unavailable}`);
    return run;
  }
  run.available = true;
  run.calibration = prep.calibration;
  run.notes = prep.notes;
  const fixturesId = `cpu-${s.name}@${t.name}`;
  await lg.setFixtures(fixturesId, prep.fixtures);
  const lo = ladderOpts(s, o);
  // Warm-up: JIT, caches (introspection answers), connections to Redis/Postgres.
  await runStep(lg, t, s, fixturesId, rates[Math.min(1, rates.length - 1)]!, lo, 'warmup', undefined, num(o, 'warmup', 3));
  const steps: Step[] = [];
  for (const r of rates) { await sleep(1000); steps.push(await runStep(lg, t, s, fixturesId, r, lo)); }
  for (const c of satConns) { await sleep(1000); steps.push(await runStep(lg, t, s, fixturesId, 0, lo, 'saturated', c)); }
  run.steps = steps;
  const sat = steps.filter((x) => x.kind === 'saturated' && x.cost?.requests);
  // The cheapest saturated step is the reference: more connections than needed only add queueing.
  const satUs = Math.min(...sat.map((x) => x.cost!.totalUs));
  const flags = wakeupFlags(steps.filter((x) => x.kind === 'step').map((x) => ({ offered: x.offered, totalUs: x.cost?.totalUs ?? 0 })), Number.isFinite(satUs) ? satUs : 0);
  run.cpu = { saturatedUs: Number.isFinite(satUs) ? satUs : undefined, limit: WAKEUP_LIMIT, flags };
  for (const f of flags) say(`cpu ${s.name}: ${f.offered} req/s costs ${f.ratio}× the saturated step per request${f.flagged ? ` — FLAGGED (> ${WAKEUP_LIMIT}×)` : ''}`);
  return run;
}
