// Issue 19 1c: a 10 s burst at 5× capacity, then how long svc takes to serve promptly again. After the
// burst's load stops, one client_credentials request at a time (a signature each, so it waits behind
// whatever the signing queue still holds) until one answers 200 within 100 ms: that is the drain time.
import type { Scenario } from '../scenarios/types.js';
import { connectionsFor, runStep, type LadderOpts, type Step } from './ladder.js';
import type { LoadGen } from './loadgen.js';
import type { Target } from './target.js';
import { basic, postForm, say, sleep } from './util.js';

export interface Burst { step: Step; drainMs: number | undefined; probes: Array<{ atMs: number; status: number; ms: number }> }

export async function runBurst(lg: LoadGen, t: Target, s: Scenario, fixturesId: string, capacity: number, o: LadderOpts, seconds = 10): Promise<Burst> {
  const offered = Math.max(1, Math.round(capacity * 5));
  await sleep(1000);
  const step = await runStep(lg, t, s, fixturesId, offered, o, 'overload', connectionsFor(offered * s.reqsPerUnit, o, 0.5, Math.max(o.maxConnections, 2000)), seconds);
  const ex = t.bootstrap?.clients.exchanger;
  const probes: Burst['probes'] = [];
  let drainMs: number | undefined;
  if (ex) {
    const auth = basic(ex.client_id, ex.client_secret);
    const t0 = performance.now();
    while (performance.now() - t0 < 10_000) {
      const p0 = performance.now();
      const r = await postForm(`${t.url}/token`, { grant_type: 'client_credentials' }, auth).catch(() => ({ status: 0 }));
      const ms = performance.now() - p0;
      probes.push({ atMs: Math.round(p0 - t0), status: r.status, ms: Math.round(ms * 10) / 10 });
      if (r.status === 200 && ms < 100) { drainMs = Math.round(performance.now() - t0); break; }
    }
  }
  say(`${t.name} ${s.name} burst ${offered} ${s.unit} for ${seconds} s: ${step.shed} shed (${step.shedPct}%), accepted p95 ${step.latencyServed.p95} ms; prompt again ${drainMs === undefined ? 'NOT within 10 s' : `after ${drainMs} ms`} (${probes.length} probes)`);
  return { step, drainMs, probes };
}
