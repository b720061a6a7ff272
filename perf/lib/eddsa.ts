// Issue 35 item 1: client_credentials and token exchange capacity when svc signs with EdDSA (Ed25519),
// against the same scenarios signed with RS256 in the same run. The EdDSA svc gets a database of its
// own (dropped afterwards), so its deployment keys are generated as Ed25519 by `bootstrap`; everything
// else (workers, fixtures, load) is the RS256 run's.
import postgres from 'postgres';
import type { LoadGen } from './loadgen.js';
import type { ScenarioRun } from './report.js';
import { runCpu } from './cpurun.js';
import { startSvc } from './target.js';
import { num, say, stamp, type Opts } from './util.js';

export const EDDSA_SCENARIOS = ['client-credentials', 'exchange-bearer'];
const TARGET = 2.5;

/** The saturated steps' best correct-answer rate and the CPU per answer there. */
function capacityOf(r: ScenarioRun | undefined): { perSec: number; cpuUs?: number } | undefined {
  const sat = r?.steps.filter((s) => s.kind === 'saturated' && s.good > 0) ?? [];
  if (!sat.length) return undefined;
  const best = sat.reduce((a, b) => (b.good > a.good ? b : a));
  return { perSec: Math.round(best.good), cpuUs: best.cost?.totalUs };
}

/** Measures the EdDSA side; returns its runs (scenario names prefixed `eddsa `). */
export async function runEddsa(lg: LoadGen, o: Opts): Promise<ScenarioRun[]> {
  const base = process.env.DATABASE_URL;
  if (!base) throw new Error('eddsa: DATABASE_URL is not set (npm run perf sets it)');
  const dbName = `svc_perf_eddsa_${stamp().replace(/[^0-9]/g, '')}_${process.pid}`;
  const admin = new URL(base); admin.pathname = '/postgres';
  const own = new URL(base); own.pathname = `/${dbName}`;
  const adminSql = postgres(admin.toString(), { max: 1, onnotice: () => {} });
  await adminSql.unsafe(`create database "${dbName}"`);
  try {
    say('eddsa: starting svc with TOKEN_SIGNING_ALG=EdDSA on a fresh database');
    const svc = await startSvc({ workers: num(o, 'workers', 2), queueWorkers: false, env: { TOKEN_SIGNING_ALG: 'EdDSA', DATABASE_URL: own.toString() } });
    try {
      const runs = await runCpu(lg, svc, { ...o, only: EDDSA_SCENARIOS.join(','), floor: false });
      for (const r of runs) r.scenario = `eddsa ${r.scenario}`;
      return runs;
    } finally {
      await svc.stop();
    }
  } finally {
    await adminSql.unsafe(`drop database if exists "${dbName}" with (force)`).catch(() => {});
    await adminSql.end({ timeout: 5 });
  }
}

/** Target rows: each EdDSA capacity against its RS256 capacity of the same run, CPU per answer beside. */
export function eddsaTargets(runs: ScenarioRun[]): Array<{ target: string; measured: string; limit: string; pass: boolean | undefined }> {
  return EDDSA_SCENARIOS.map((n) => {
    const rs = capacityOf(runs.find((r) => r.scenario === `cpu ${n}` && r.target === 'svc' && r.available));
    const ed = capacityOf(runs.find((r) => r.scenario === `eddsa cpu ${n}` && r.available));
    const ratio = rs && ed ? Math.round((ed.perSec / rs.perSec) * 100) / 100 : undefined;
    const cpu = (c: { cpuUs?: number } | undefined) => (c?.cpuUs === undefined ? '–' : `${Math.round(c.cpuUs)} µs`);
    return {
      target: `${n === 'exchange-bearer' ? 'token exchange' : 'client_credentials'} capacity, EdDSA vs RS256 (same run)`,
      measured: `${ed?.perSec ?? '–'} vs ${rs?.perSec ?? '–'} req/s = ${ratio ?? '–'}× (CPU per answer ${cpu(ed)} vs ${cpu(rs)})`,
      limit: `≥ ${TARGET}×`,
      pass: ratio === undefined ? undefined : ratio >= TARGET,
    };
  });
}
