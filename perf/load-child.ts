// The load generator process: runs autocannon (programmatic) for one step at a time on orders from the
// harness over IPC, so its CPU is its own process's and can be measured apart from the server's.
// Scenarios with a `flow` (login) run under the open-loop driver (perf/lib/openloop.ts) instead.
import autocannon from 'autocannon';
import { Checker } from './lib/checker.js';
import { runOpenLoop } from './lib/openloop.js';
import { setPacing } from './lib/pacing.js';
import { sinkStats, startSink } from './lib/smtp-sink.js';
import { percentiles } from './lib/util.js';
import { SCENARIOS, VARIANTS } from './scenarios/index.js';

export interface RunOrder {
  id: number;
  scenario: string;
  fixturesId: string;
  url: string;
  /** Requests per second offered (autocannon overallRate). */
  rate: number;
  durationS: number;
  connections: number;
  timeoutS: number;
  /** even (default): requests spaced 1/rate per connection; burst: stock autocannon per-second quota. */
  pacing: 'even' | 'burst';
}

const fixtures = new Map<string, unknown>();

async function runStep(o: RunOrder) {
  const scenario = SCENARIOS[o.scenario] ?? VARIANTS[o.scenario];
  if (!scenario) throw new Error(`unknown scenario ${o.scenario}`);
  setPacing(o.pacing !== 'burst');
  const check = new Checker();
  const all: number[] = [];
  const ok2xx: number[] = [];
  const served: number[] = [];
  const shed: number[] = [];
  const statuses: Record<string, number> = {};
  const onResponse = (code: number, ms: number) => {
    statuses[code] = (statuses[code] ?? 0) + 1;
    if (all.length >= 3_000_000) return;
    all.push(ms);
    if (code >= 200 && code < 300) ok2xx.push(ms);
    if (code === 503) shed.push(ms); else served.push(ms);
  };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let result: any;
  let elapsedS: number;
  if (scenario.flow) {
    const mails0 = sinkStats.messages;
    // Open loop: rate is in requests (the harness's unit), arrivals are whole flows.
    const r = await runOpenLoop({
      url: o.url, arrivalsPerSec: o.rate / scenario.reqsPerUnit, durationS: o.durationS, connections: o.connections,
      timeoutS: o.timeoutS, flow: scenario.flow(fixtures.get(o.fixturesId), check), onResponse,
      onDropped: (why, n) => { for (let i = 0; i < n; i++) check.flowFail(why); },
    });
    result = { errors: r.errors, timeouts: r.timeouts, resets: 0 };
    check.notes['mails received'] = sinkStats.messages - mails0;
    // Rates are per arrival window: flows that arrived in it and finished (at most timeoutS) after it count.
    elapsedS = r.windowS;
  } else {
    if (!scenario.client) throw new Error(`scenario ${o.scenario} has neither client nor flow`);
    const requests = scenario.client(fixtures.get(o.fixturesId), check);
    result = await new Promise((resolve, reject) => {
      const inst = autocannon({
        url: o.url, connections: o.connections, duration: o.durationS, overallRate: o.rate > 0 ? o.rate : undefined,
        timeout: o.timeoutS, requests, pipelining: 1,
      }, (err, res) => (err ? reject(err) : resolve(res)));
      inst.on('response', (_c: unknown, code: number, _bytes: number, ms: number) => onResponse(code, ms));
    });
    elapsedS = (performance.now() - t0) / 1000;
  }
  const cpuS = (performance.now() - t0) / 1000;
  for (const [k, v] of Object.entries(check.samples)) {
    const p = percentiles(v);
    Object.assign(check.notes, { [`${k} p50 ms`]: p.p50, [`${k} p95 ms`]: p.p95, [`${k} max ms`]: p.max });
  }
  const cpu = process.cpuUsage(cpu0);
  return {
    elapsedS,
    responses: all.length,
    statuses,
    errors: result.errors ?? 0,
    timeouts: result.timeouts ?? 0,
    resets: result.resets ?? 0,
    latency: percentiles(all),
    latency2xx: percentiles(ok2xx),
    latencyServed: percentiles(served),
    latencyShed: percentiles(shed),
    flows: check.flows.length ? percentiles(check.flows) : undefined,
    flowsDone: check.flows.length,
    flowsFailed: check.flowsFailed,
    checked: check.checked,
    correct: check.correct,
    shed: check.shed,
    misclassified: check.misclassified,
    misclassifiedTotal: check.misclassifiedTotal,
    kinds: check.kinds,
    notes: check.notes,
    loadgenCpuPct: Math.round(((cpu.user + cpu.system) / 1e6 / cpuS) * 1000) / 10,
    smtp: { ...sinkStats },
  };
}
export type StepRaw = Awaited<ReturnType<typeof runStep>>;

process.on('message', (m: any) => {
  const reply = (x: object) => process.send?.({ id: m.id, ...x });
  (async () => {
    if (m.type === 'fixtures') { fixtures.set(m.fixturesId, m.fixtures); return reply({ ok: true }); }
    if (m.type === 'smtp') return reply({ ok: true, port: await startSink(m.port ?? 0) });
    if (m.type === 'run') return reply({ ok: true, result: await runStep(m.order as RunOrder) });
    if (m.type === 'exit') { reply({ ok: true }); setTimeout(() => process.exit(0), 50); return undefined; }
    return reply({ ok: false, error: `unknown message ${m.type}` });
  })().catch((err: Error) => reply({ ok: false, error: err.stack ?? err.message }));
});
process.on('disconnect', () => process.exit(0));
