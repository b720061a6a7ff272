// `npm run perf -- tracing-ab`: issue 34's "tracing at 1% sampling within 5%", measured side by side
// (perf/README.md). Options: --only introspection-hit --rounds 6 --duration 8 --rate 1000 --connections 32 --ratio 0.01.
// Two svc instances with one HTTP process each, one with tracing off and one sampling `--ratio` of its
// requests to a local OTLP sink, take the same step at the same time from two load processes. Each
// instance's CPU per correct answer (its own processes: Redis and Postgres are shared and not split) is
// compared within the step, so the host's drift, which moved whole sequential runs by ±20% (run 92),
// falls on both alike. Each round runs a paced step and a closed loop; odd rounds swap the load processes.
// By default it runs twice, once with each instance started first (runTracingAb says why).
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { createSql } from '../../src/sql.js';
import { CPU_SCENARIOS } from './cpurun.js';
import { CpuCost, type CpuByKind } from './cpucost.js';
import { ladderOpts } from './harness.js';
import type { LadderOpts } from './ladder.js';
import type { Scenario } from '../scenarios/types.js';
import { LoadGen } from './loadgen.js';
import { startSvc, type StartedSvc } from './target.js';
import { freePort, num, ROOT, say, sleep, str, type Opts } from './util.js';

interface Side { name: 'off' | 'traced'; svc: StartedSvc }
interface Figure { answers: number; secs: number; cpu: CpuByKind }

/** CPU µs per answer of the HTTP processes (event loop, crypto and other threads) and of every svc process. */
function perAnswer(f: Figure): { http: number; all: number } {
  const http = f.cpu.http + f.cpu.crypto + f.cpu.threads;
  const all = http + f.cpu['other svc'] + f.cpu['email path'];
  const us = (s: number) => (f.answers > 0 ? Math.round((s / f.answers) * 1e7) / 10 : NaN);
  return { http: us(http), all: us(all) };
}

/**
 * A database for the traced instance beside the harness's: a bootstrap renews the default clients'
 * secrets, so two instances bootstrapped on one database would leave the first with stale ones.
 */
async function secondDatabase(url: string): Promise<string> {
  const u = new URL(url);
  const name = `${u.pathname.slice(1) || 'svc_perf'}_ab`;
  const sql = createSql({ databaseUrl: url, databasePoolSize: 1 });
  try {
    const [row] = await sql`select 1 from pg_database where datname = ${name}`;
    if (!row) await sql.unsafe(`create database "${name.replace(/"/g, '')}"`);
  } finally {
    await sql.end({ timeout: 5 });
  }
  u.pathname = `/${name}`;
  return u.toString();
}

async function startSink(): Promise<{ child: ChildProcess; url: string; spans(): number }> {
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'perf', 'otlp-sink.js'), String(port)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let spans = 0;
  let ready!: () => void;
  const up = new Promise<void>((r) => { ready = r; });
  child.stdout!.setEncoding('utf8').on('data', (s: string) => {
    if (s.includes('otlp sink on')) ready();
    for (const m of s.matchAll(/spans (\d+)/g)) spans = Number(m[1]);
  });
  await up;
  return { child, url: `http://127.0.0.1:${port}`, spans: () => spans };
}

const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2; };
const r3 = (x: number) => Math.round(x * 1000) / 1000;

type Kind = 'paced' | 'closed';
interface Setup { s: Scenario; rounds: number; durationS: number; rate: number; conns: number; ratio: string; lo: LadderOpts; loads: LoadGen[]; sinkUrl: string; base: string }

/**
 * One order: both instances started (`tracedFirst` decides which first, and which gets the second
 * database), warmed up, then `rounds` rounds. Returns the pooled ratio per step kind.
 */
async function runOrder(u: Setup, opts: Opts, tracedFirst: boolean): Promise<Record<Kind, number>> {
  const { s, lo, loads } = u;
  const sides: Side[] = [];
  try {
    // --aa: the "traced" instance runs with tracing off too, which shows the set-up's own asymmetry.
    const traced: Record<string, string> = opts.aa === true ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT: u.sinkUrl, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: u.ratio };
    const specs: Array<{ name: Side['name']; env: Record<string, string> }> = [
      { name: 'off', env: { REDIS_PREFIX: `${process.env.REDIS_PREFIX ?? 'perf-'}ab-off:` } },
      { name: 'traced', env: { REDIS_PREFIX: `${process.env.REDIS_PREFIX ?? 'perf-'}ab-traced:`, ...traced } },
    ];
    if (tracedFirst) specs.reverse();
    specs[1]!.env.DATABASE_URL = await secondDatabase(u.base);
    for (const sp of specs) sides.push({ name: sp.name, svc: await startSvc({ workers: 1, queueWorkers: false, env: sp.env }) });
    sides.sort((a, b) => (a.name === 'off' ? -1 : 1) - (b.name === 'off' ? -1 : 1));
    say(`instances: ${specs.map((sp) => `${sp.name}${sp.env.DATABASE_URL ? ' (second database)' : ''}`).join(', then ')}${opts.aa === true ? '; A/A: "traced" has tracing off too' : ''}`);
    for (const side of sides) {
      say(`${side.name}: preparing fixtures`);
      const prep = await s.prepare(side.svc, opts);
      for (const lg of loads) await lg.setFixtures(`ab-${side.name}`, prep.fixtures);
    }

    /** One step on both instances at once; `swap` gives each instance the other load process. */
    const both = async (offered: number, connections: number, swap: boolean, secs = u.durationS): Promise<Record<Side['name'], Figure>> => {
      const out = {} as Record<Side['name'], Figure>;
      await Promise.all(sides.map(async (side, i) => {
        const lg = loads[swap ? 1 - i : i]!;
        const coster = new CpuCost(() => side.svc.pids(), () => []).start();
        const raw = await lg.run({ scenario: s.name, fixturesId: `ab-${side.name}`, url: side.svc.url, rate: offered, durationS: secs, connections, timeoutS: lo.timeoutS, pacing: 'even' });
        const used = coster.stop();
        out[side.name] = { answers: raw.correct, secs: used.secs, cpu: used.cpu };
      }));
      return out;
    };

    const pacedConns = Math.max(8, Math.ceil(u.rate * lo.budgetS));
    await both(u.rate, pacedConns, false, num(opts, 'warmup', 3));
    const ratios: Record<Kind, number[]> = { paced: [], closed: [] };
    const pooled: Record<Kind, Record<Side['name'], Figure[]>> = { paced: { off: [], traced: [] }, closed: { off: [], traced: [] } };
    for (let i = 0; i < u.rounds; i++) {
      const swap = i % 2 === 1;
      for (const kind of ['paced', 'closed'] as const) {
        await sleep(500);
        const f = kind === 'paced' ? await both(u.rate, pacedConns, swap) : await both(0, u.conns, swap);
        const off = perAnswer(f.off);
        const tr = perAnswer(f.traced);
        const x = tr.all / off.all;
        ratios[kind].push(x);
        pooled[kind].off.push(f.off);
        pooled[kind].traced.push(f.traced);
        say(`round ${i + 1} ${kind}: off ${off.all} µs/answer (http ${off.http}, ${Math.round(f.off.answers / f.off.secs)}/s), traced ${tr.all} µs (http ${tr.http}, ${Math.round(f.traced.answers / f.traced.secs)}/s): ${r3(x)}×; load ${os.loadavg()[0]!.toFixed(2)}`);
      }
    }
    const result = {} as Record<Kind, number>;
    for (const kind of ['paced', 'closed'] as const) {
      const sum = (fs: Figure[]) => fs.reduce((a, f) => ({ answers: a.answers + f.answers, secs: a.secs + f.secs, cpu: Object.fromEntries(Object.keys(f.cpu).map((k) => [k, (a.cpu[k as keyof CpuByKind] ?? 0) + f.cpu[k as keyof CpuByKind]])) as CpuByKind }), { answers: 0, secs: 0, cpu: {} as CpuByKind });
      const off = perAnswer(sum(pooled[kind].off));
      const tr = perAnswer(sum(pooled[kind].traced));
      const xs = ratios[kind];
      result[kind] = tr.all / off.all;
      say(`${tracedFirst ? 'traced first' : 'off first'}, ${kind}: traced ÷ off per answer, pooled ${tr.all} ÷ ${off.all} = ${r3(tr.all / off.all)}× (HTTP processes ${r3(tr.http / off.http)}×); rounds median ${r3(median(xs))}×, min ${r3(Math.min(...xs))}, max ${r3(Math.max(...xs))}`);
    }
    return result;
  } finally {
    for (const side of sides) await side.svc.stop().catch(() => {});
  }
}

/**
 * Both orders by default (`--order off-first|traced-first` runs one): the instance started second
 * measured up to 6% cheaper in closed loops with tracing off on both (A/A, RESULTS run 96), so each
 * order's ratio carries that position effect with opposite signs and their geometric mean cancels it.
 */
export async function runTracingAb(opts: Opts): Promise<void> {
  const scenarioName = str(opts, 'only') ?? 'introspection-hit';
  const make = CPU_SCENARIOS[scenarioName];
  if (!make) throw new Error(`unknown scenario ${scenarioName}; one of ${Object.keys(CPU_SCENARIOS).join(', ')}`);
  const s = make();
  const base = process.env.DATABASE_URL;
  if (!base) throw new Error('tracing-ab needs DATABASE_URL (npm run perf sets it)');
  const order = str(opts, 'order');
  const orders = order === 'off-first' ? [false] : order === 'traced-first' ? [true] : [false, true];
  const sink = await startSink();
  const u: Setup = {
    s, base, rounds: num(opts, 'rounds', 6), durationS: num(opts, 'duration', 8), rate: num(opts, 'rate', 1000), conns: num(opts, 'connections', 32),
    ratio: str(opts, 'ratio') ?? '0.01', lo: ladderOpts(s, opts), loads: [new LoadGen(), new LoadGen()], sinkUrl: sink.url,
  };
  try {
    say(`tracing A/B: ${scenarioName}, ${u.rounds} rounds of ${u.rate} req/s and a closed loop of ${u.conns} connections per instance, ${u.durationS} s each, ${orders.length === 2 ? 'both start orders' : order}; traced instance samples ${u.ratio} to ${sink.url}`);
    const results: Array<Record<Kind, number>> = [];
    for (const tracedFirst of orders) results.push(await runOrder(u, opts, tracedFirst));
    if (results.length === 2) {
      for (const kind of ['paced', 'closed'] as const) say(`${kind}: traced ÷ off, both orders (geometric mean) ${r3(Math.sqrt(results[0]![kind] * results[1]![kind]))}×`);
    }
    await sleep(6000); // the sink prints its count every 5 s
    say(`spans received by the sink: ${sink.spans()}`);
  } finally {
    for (const lg of u.loads) await lg.close().catch(() => lg.kill());
    sink.child.kill('SIGTERM');
  }
}
